package interceptor_test

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// maxBody drops SEND frames whose body is larger than a byte limit. It
// keeps no state, so one value serves every session.
type maxBody int

// tooLarge is maxBody's drop reason, made once: a Result carries the
// value, so dropping a frame allocates nothing.
var tooLarge = outcome.NewDrop("too_large")

func (m maxBody) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	if f.Command == stompframe.CommandSend && len(f.Body) > int(m) {
		return interceptor.DropFrame(tooLarge)
	}
	return interceptor.Continue()
}

// ExampleChain embeds the inbound chain with a custom stage after the
// session limiter. The limiter counts every SEND, the large one included,
// before the custom stage drops it; the Chain counts as passed only what
// passed both.
func ExampleChain() {
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, err := interceptor.NewLimitStage(interceptor.LimitConfig{
		Limit: sessionlimit.Config{Limit: 3, Window: time.Second},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	chain := interceptor.NewChain(nil, principal, limit, maxBody(16))

	send := func(body string) *stompframe.Frame {
		return &stompframe.Frame{
			Command: stompframe.CommandSend,
			Headers: []stompframe.Header{{Name: "destination", Value: "/topic/room.1"}},
			Body:    []byte(body),
		}
	}
	frames := []*stompframe.Frame{
		{Command: stompframe.CommandConnect},
		send("hello"),
		send("a message far longer than sixteen bytes"),
		send("hi"),
		send("one too many"),
		{Command: stompframe.CommandSubscribe, Headers: []stompframe.Header{{Name: "id", Value: "0"}, {Name: "destination", Value: "/topic/room.1"}}},
	}

	s := &interceptor.Session{ID: "1"}
	now := time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)
	for _, f := range frames {
		r := chain.Handle(s, f, now)
		if r.Outcome == interceptor.Pass {
			fmt.Printf("%-9s %2d bytes: %s\n", f.Command, len(f.Body), r.Outcome)
		} else {
			fmt.Printf("%-9s %2d bytes: %s (%s)\n", f.Command, len(f.Body), r.Outcome, r.Reason)
		}
	}
	fmt.Println("principal:", s.Principal.Name)
	c := s.Counts()
	fmt.Printf("received %d = passed %d + dropped %d\n", c.Received, c.Passed, c.Dropped)
	// Output:
	// CONNECT    0 bytes: pass
	// SEND       5 bytes: pass
	// SEND      39 bytes: drop (too_large)
	// SEND       2 bytes: pass
	// SEND      12 bytes: drop (rate_limit)
	// SUBSCRIBE  0 bytes: pass
	// principal: anonymous-1
	// received 6 = passed 4 + dropped 2
}

// quietRoom is a stage with per-session state: it lets each session send
// to at most two distinct destinations, and keeps the ones it saw in the
// session (Session.SetValue) under a key type of its own.
type quietRoom struct{}

type quietRoomKey struct{}

var tooManyRooms = outcome.NewDrop("too_many_rooms")

func (quietRoom) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	if f.Command != stompframe.CommandSend {
		return interceptor.Continue()
	}
	seen, _ := s.Value(quietRoomKey{}).(map[string]bool)
	if seen == nil {
		seen = map[string]bool{}
		s.SetValue(quietRoomKey{}, seen)
	}
	dest := f.Get("destination")
	if !seen[dest] && len(seen) == 2 {
		return interceptor.DropFrame(tooManyRooms)
	}
	seen[dest] = true
	return interceptor.Continue()
}

// ExampleSession_SetValue shows a custom stage keeping state per session.
func ExampleSession_SetValue() {
	chain := interceptor.NewChain(nil, quietRoom{})
	send := func(dest string) *stompframe.Frame {
		return &stompframe.Frame{Command: stompframe.CommandSend, Headers: []stompframe.Header{{Name: "destination", Value: dest}}}
	}
	alice, bob := &interceptor.Session{ID: "a"}, &interceptor.Session{ID: "b"}
	now := time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)
	for _, d := range []string{"/topic/1", "/topic/2", "/topic/3", "/topic/1"} {
		fmt.Println("alice", d, chain.Handle(alice, send(d), now).Outcome)
	}
	fmt.Println("bob /topic/3", chain.Handle(bob, send("/topic/3"), now).Outcome)
	// Output:
	// alice /topic/1 pass
	// alice /topic/2 pass
	// alice /topic/3 drop
	// alice /topic/1 pass
	// bob /topic/3 pass
}
