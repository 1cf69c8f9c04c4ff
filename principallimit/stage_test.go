package principallimit

import (
	"errors"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

func send(dest string, kv ...string) *stompframe.Frame {
	f := &stompframe.Frame{Command: stompframe.CommandSend}
	f.Add("destination", dest)
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return f
}

func newTestStage(t *testing.T, cfg StageConfig) *Stage {
	t.Helper()
	st, err := NewStage(cfg)
	if err != nil {
		t.Fatalf("NewStage: %v", err)
	}
	return st
}

func session(id, principal string, anonymous bool) *interceptor.Session {
	return &interceptor.Session{ID: id, Principal: &interceptor.Principal{Name: principal, Anonymous: anonymous}}
}

// In a chain, three sessions of one principal share its limit, drops are
// silent and under their own reason, and every frame is accounted for:
// received = passed + dropped, per session.
func TestStageInChain(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 5})
	st := newTestStage(t, StageConfig{Limiter: l})
	c := interceptor.NewChain(nil, st)
	sessions := []*interceptor.Session{session("1", "alice", false), session("2", "alice", false), session("3", "alice", false)}
	other := session("4", "bob", false)
	passed := 0
	for i := range 30 {
		r := c.Handle(sessions[i%3], send("/topic/a"), t0)
		switch {
		case r.Outcome == interceptor.Pass:
			passed++
		case r.Outcome != interceptor.Drop || r.Reason != outcome.DropPrincipalLimit || r.Message != "":
			t.Fatalf("frame %d: %+v, want a silent drop under principal_limit", i, r)
		}
	}
	if passed != 5 {
		t.Errorf("passed %d of 30 frames of one principal on three sessions, want 5", passed)
	}
	if r := c.Handle(other, send("/topic/a"), t0); r.Outcome != interceptor.Pass {
		t.Errorf("another principal: %+v, want pass", r)
	}
	for _, s := range sessions {
		if n := s.Counts(); n.Received != n.Passed+n.Dropped || n.Received != 10 {
			t.Errorf("session %s counts %+v, want 10 received = passed + dropped", s.ID, n)
		}
	}
}

// Anonymous sessions, sessions before CONNECT and frames the stage does
// not count pass untouched.
func TestStagePassesUncounted(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 1})
	st := newTestStage(t, StageConfig{Limiter: l})
	sub := &stompframe.Frame{Command: stompframe.CommandSubscribe}
	sub.Add("destination", "/topic/a")
	for i, tc := range []struct {
		s *interceptor.Session
		f *stompframe.Frame
	}{
		{session("1", "anon-1", true), send("/topic/a")},
		{&interceptor.Session{ID: "2"}, send("/topic/a")},
		{session("3", "alice", false), sub},
		{session("3", "alice", false), send("/topic/a", "transaction", "tx1")},
	} {
		for range 3 {
			if r := st.Handle(tc.s, tc.f, t0); r.Outcome != interceptor.Pass {
				t.Errorf("case %d: %+v, want pass", i, r)
			}
		}
	}
	if _, err := NewStage(StageConfig{Limiter: l, Commands: []string{"ACK"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewStage with ACK = %v, want ErrInvalidConfig", err)
	}
	if _, err := NewStage(StageConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewStage without a Limiter = %v, want ErrInvalidConfig", err)
	}
}

// LimitFor gives a destination its rule's limit and window, counted apart
// from the global limit; a destination it does not match keeps the
// global one, and a rule of limit 0 is not limited.
func TestStageLimitFor(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 3})
	var asked []string
	st := newTestStage(t, StageConfig{Limiter: l, LimitFor: func(dest string) (string, int, time.Duration, bool) {
		asked = append(asked, dest)
		switch dest {
		case "/topic/lobby.ready":
			return "lobby", 1, 10 * time.Second, true
		case "/topic/firehose":
			return "firehose", 0, 0, true
		}
		return "", 0, 0, false
	}})
	s := session("1", "alice", false)
	count := func(dest string, n int, at time.Duration) int {
		passed := 0
		for range n {
			if st.Handle(s, send(dest), t0.Add(at)).Outcome == interceptor.Pass {
				passed++
			}
		}
		return passed
	}
	for _, tc := range []struct {
		dest string
		at   time.Duration
		n    int
		want int
	}{
		{"/topic/lobby.ready", 0, 5, 1},
		{"/topic/chat", 0, 5, 3}, // the global limit, not the lobby's
		{"/topic/firehose", 0, 50, 50},
		{"/topic/lobby.ready", 5 * time.Second, 2, 0}, // the lobby's window is 10 s
		{"/topic/chat", 5 * time.Second, 2, 2},
		{"/topic/lobby.ready", 10 * time.Second, 2, 1},
	} {
		if got := count(tc.dest, tc.n, tc.at); got != tc.want {
			t.Errorf("%d SENDs to %s at +%v: %d passed, want %d", tc.n, tc.dest, tc.at, got, tc.want)
		}
	}
	if len(asked) == 0 || asked[0] != "/topic/lobby.ready" {
		t.Errorf("LimitFor asked %v, want the frames' destinations", asked)
	}
}

// A transaction's SENDs are charged at COMMIT, all or none.
func TestStageCommit(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 5})
	st := newTestStage(t, StageConfig{Limiter: l})
	c := interceptor.NewChain(nil, st)
	s := session("1", "alice", false)
	for range 4 {
		c.Handle(s, send("/topic/a", "transaction", "tx"), t0)
	}
	if r := c.Commit(s, 4, t0); r.Outcome != interceptor.Pass {
		t.Fatalf("commit of 4 within 5: %+v, want pass", r)
	}
	if r := c.Commit(s, 2, t0); r.Outcome != interceptor.Drop || r.Reason != outcome.DropPrincipalLimit {
		t.Errorf("commit of 2 more: %+v, want dropped under principal_limit", r)
	}
	if r := c.Commit(s, 1, t0); r.Outcome != interceptor.Pass {
		t.Errorf("commit of the fifth: %+v, want pass", r)
	}
}
