package broker

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

// subscribe creates a V12 subscription and subscribes it.
func subscribe(b *Broker, id, dest string, s Subscriber) *Subscription {
	sub := NewSubscription(id, dest, AckAuto, stompframe.V12, s)
	b.Subscribe(sub)
	return sub
}

// publish publishes a message with body to dest.
func publish(b *Broker, dest, body string) (*Message, int) {
	m := NewMessage(b.NextID(), send(body, "destination", dest))
	return m, b.Publish(m)
}

func TestPublishFanOut(t *testing.T) {
	t.Parallel()
	b := New()
	alice, bob, carol := &recorder{}, &recorder{}, &recorder{}
	a1 := subscribe(b, "0", "/topic/a", alice)
	a2 := subscribe(b, "1", "/topic/a", alice) // a second subscription of the same session
	b1 := subscribe(b, "0", "/topic/a", bob)
	subscribe(b, "0", "/topic/b", carol)
	subscribe(b, "1", "/topic/a/x", carol)
	subscribe(b, "2", "/topic/", carol)
	subscribe(b, "3", "/topic/A", carol)

	m, n := publish(b, "/topic/a", "hello")
	if n != 3 {
		t.Errorf("Publish to /topic/a delivered %d, want 3", n)
	}
	check := func(name string, r *recorder, want ...*Subscription) {
		t.Helper()
		got := r.deliveries()
		if len(got) != len(want) {
			t.Fatalf("%s got %d deliveries, want %d", name, len(got), len(want))
		}
		for i, d := range got {
			if d.sub != want[i] || d.msg != m {
				t.Errorf("%s delivery %d: subscription %q message %q, want subscription %q message %q", name, i, d.sub.ID, d.msg.ID, want[i].ID, m.ID)
			}
		}
	}
	check("alice", alice, a1, a2)
	check("bob", bob, b1)
	check("carol", carol)

	if _, n := publish(b, "/topic/none", "x"); n != 0 {
		t.Errorf("Publish to a destination without subscribers delivered %d, want 0", n)
	}
	if got := len(carol.deliveries()); got != 0 {
		t.Errorf("carol got %d deliveries for destinations she did not subscribe to, want 0", got)
	}
}

func TestSubscribeUnsubscribe(t *testing.T) {
	t.Parallel()
	b := New()
	r := &recorder{}
	s1 := NewSubscription("1", "/topic/a", AckAuto, stompframe.V12, r)
	s2 := NewSubscription("2", "/topic/a", AckAuto, stompframe.V12, r)
	s3 := NewSubscription("3", "/topic/a", AckAuto, stompframe.V12, r)
	other := NewSubscription("4", "/topic/b", AckAuto, stompframe.V12, r)

	steps := []struct {
		name       string
		do         func() (bool, bool)
		want1      bool
		want2      bool
		subs       int
		wantOthers int
	}{
		{"subscribe first", func() (bool, bool) { return b.Subscribe(s1), false }, true, false, 1, 0},
		{"subscribe second", func() (bool, bool) { return b.Subscribe(s2), false }, false, false, 2, 0},
		{"subscribe other destination", func() (bool, bool) { return b.Subscribe(other), false }, true, false, 2, 1},
		{"subscribe third", func() (bool, bool) { return b.Subscribe(s3), false }, false, false, 3, 1},
		{"unsubscribe middle", func() (bool, bool) { return b.Unsubscribe(s2) }, true, false, 2, 1},
		{"unsubscribe middle again", func() (bool, bool) { return b.Unsubscribe(s2) }, false, false, 2, 1},
		{"unsubscribe first", func() (bool, bool) { return b.Unsubscribe(s1) }, true, false, 1, 1},
		{"unsubscribe last", func() (bool, bool) { return b.Unsubscribe(s3) }, true, true, 0, 1},
		{"unsubscribe last again", func() (bool, bool) { return b.Unsubscribe(s3) }, false, true, 0, 1},
		{"subscribe after empty", func() (bool, bool) { return b.Subscribe(s1), false }, true, false, 1, 1},
		{"unsubscribe other", func() (bool, bool) { return b.Unsubscribe(other) }, true, true, 1, 0},
	}
	for _, st := range steps {
		got1, got2 := st.do()
		if got1 != st.want1 || got2 != st.want2 {
			t.Errorf("%s: got %v, %v, want %v, %v", st.name, got1, got2, st.want1, st.want2)
		}
		if got := b.Subscribers("/topic/a"); got != st.subs {
			t.Errorf("%s: Subscribers(/topic/a) = %d, want %d", st.name, got, st.subs)
		}
		if got := b.Subscribers("/topic/b"); got != st.wantOthers {
			t.Errorf("%s: Subscribers(/topic/b) = %d, want %d", st.name, got, st.wantOthers)
		}
	}
}

func TestUnsubscribeUnknown(t *testing.T) {
	t.Parallel()
	b := New()
	r := &recorder{}
	stranger := NewSubscription("9", "/topic/a", AckAuto, stompframe.V12, r)
	if removed, last := b.Unsubscribe(stranger); removed || !last {
		t.Errorf("Unsubscribe on an empty destination = %v, %v, want false, true", removed, last)
	}
	subscribe(b, "1", "/topic/a", r)
	if removed, last := b.Unsubscribe(stranger); removed || last {
		t.Errorf("Unsubscribe of an unknown subscription = %v, %v, want false, false", removed, last)
	}
	// Same id and destination, different subscription: still unknown.
	twin := NewSubscription("1", "/topic/a", AckAuto, stompframe.V12, r)
	if removed, _ := b.Unsubscribe(twin); removed {
		t.Error("Unsubscribe removed a different subscription with the same id")
	}
	if got := b.Subscribers("/topic/a"); got != 1 {
		t.Errorf("Subscribers = %d after unknown unsubscribes, want 1", got)
	}
}

func TestUnsubscribedGetsNothing(t *testing.T) {
	t.Parallel()
	b := New()
	stay, leave := &recorder{}, &recorder{}
	subscribe(b, "0", "/topic/a", stay)
	sub := subscribe(b, "0", "/topic/a", leave)
	publish(b, "/topic/a", "1")
	b.Unsubscribe(sub)
	if _, n := publish(b, "/topic/a", "2"); n != 1 {
		t.Errorf("Publish after Unsubscribe delivered %d, want 1", n)
	}
	if got := len(stay.deliveries()); got != 2 {
		t.Errorf("remaining subscriber got %d messages, want 2", got)
	}
	if got := len(leave.deliveries()); got != 1 {
		t.Errorf("unsubscribed subscriber got %d messages, want 1", got)
	}
}

func TestPublishSkipsRefusingSubscriber(t *testing.T) {
	t.Parallel()
	b := New()
	before, full, after := &recorder{}, &recorder{refuse: true}, &recorder{}
	subscribe(b, "0", "/topic/a", before)
	subscribe(b, "0", "/topic/a", full)
	subscribe(b, "0", "/topic/a", after)
	if _, n := publish(b, "/topic/a", "x"); n != 2 {
		t.Errorf("Publish delivered %d with one refusing subscriber, want 2", n)
	}
	if len(before.deliveries()) != 1 || len(after.deliveries()) != 1 {
		t.Errorf("accepting subscribers got %d and %d messages, want 1 each", len(before.deliveries()), len(after.deliveries()))
	}
	if got := b.Subscribers("/topic/a"); got != 3 {
		t.Errorf("Subscribers = %d, want 3: a refusal does not unsubscribe", got)
	}
}

// TestPublishDuringUnsubscribe checks that Publish iterates a snapshot: a
// subscriber that unsubscribes another one from inside Deliver does not
// disturb the fan-out in progress.
func TestPublishDuringUnsubscribe(t *testing.T) {
	t.Parallel()
	b := New()
	r := &recorder{}
	var victim *Subscription
	unsub := subscriberFunc(func(sub *Subscription, m *Message) bool {
		b.Unsubscribe(victim)
		b.Subscribe(NewSubscription("late", "/topic/a", AckAuto, stompframe.V12, r))
		return true
	})
	subscribe(b, "0", "/topic/a", unsub)
	victim = subscribe(b, "1", "/topic/a", r)
	if _, n := publish(b, "/topic/a", "x"); n != 2 {
		t.Errorf("Publish delivered %d, want 2 (the subscriptions when it started)", n)
	}
	if got := b.Subscribers("/topic/a"); got != 2 {
		t.Errorf("Subscribers = %d, want 2", got)
	}
}

type subscriberFunc func(*Subscription, *Message) bool

func (f subscriberFunc) Deliver(s *Subscription, m *Message, _ *Batch) bool { return f(s, m) }

// counter is a Subscriber that counts deliveries per destination.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) Deliver(sub *Subscription, m *Message, _ *Batch) bool {
	c.mu.Lock()
	c.n[m.Destination]++
	c.mu.Unlock()
	return true
}

// TestConcurrent runs Subscribe, Unsubscribe and Publish from many
// goroutines at once; run it with -race. Steady subscribers, present
// throughout, must get every message published to their destination.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	b := New()
	const (
		dests      = 8
		churners   = 4
		publishers = 4
		rounds     = 300
	)
	destName := func(i int) string { return fmt.Sprintf("/topic/d%d", i%dests) }
	steady := &counter{n: map[string]int{}}
	for i := range dests {
		subscribe(b, "steady", destName(i), steady)
	}
	var wg sync.WaitGroup
	for c := range churners {
		wg.Go(func() {
			r := &recorder{}
			for i := range rounds {
				sub := NewSubscription(fmt.Sprint(i), destName(c+i), AckClient, stompframe.Version(10+i%3), r)
				b.Subscribe(sub)
				if removed, _ := b.Unsubscribe(sub); !removed {
					t.Errorf("Unsubscribe of a live subscription reported not removed")
				}
			}
		})
	}
	var delivered sync.Map
	for p := range publishers {
		wg.Go(func() {
			sent := map[string]int{}
			for i := range rounds {
				dest := destName(p*7 + i)
				m := NewMessage(b.NextID(), send("x", "destination", dest))
				if n := b.Publish(m); n < 1 {
					t.Errorf("Publish to %s delivered %d, want at least the steady subscriber", dest, n)
				}
				sent[dest]++
			}
			delivered.Store(p, sent)
		})
	}
	wg.Wait()

	want := map[string]int{}
	delivered.Range(func(_, v any) bool {
		for d, n := range v.(map[string]int) {
			want[d] += n
		}
		return true
	})
	for d, n := range want {
		if got := steady.n[d]; got != n {
			t.Errorf("steady subscriber got %d messages on %s, want %d", got, d, n)
		}
	}
	for i := range dests {
		if got := b.Subscribers(destName(i)); got != 1 {
			t.Errorf("Subscribers(%s) = %d after the churn, want 1", destName(i), got)
		}
	}
}

func TestNextIDUnique(t *testing.T) {
	t.Parallel()
	b1, b2 := New(), New()
	seen := make(map[string]bool, 200_000)
	for _, b := range []*Broker{b1, b2} {
		for range 100_000 {
			id := b.NextID()
			if seen[id] {
				t.Fatalf("NextID returned %q twice", id)
			}
			seen[id] = true
		}
	}
	p1, _, _ := strings.Cut(b1.NextID(), "-")
	p2, _, _ := strings.Cut(b2.NextID(), "-")
	if p1 == p2 || p1 == "" {
		t.Errorf("two brokers share the id prefix %q", p1)
	}
}

func TestNextIDConcurrent(t *testing.T) {
	t.Parallel()
	b := New()
	const workers, each = 4, 10_000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], b.NextID())
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("NextID returned %q twice", id)
			}
			seen[id] = true
		}
	}
}

// TestNextIDHeaderSafe checks that ids need no escaping in any version,
// since AppendFrame writes them raw.
func TestNextIDHeaderSafe(t *testing.T) {
	t.Parallel()
	b := New()
	for range 1000 {
		id := b.NextID()
		if id == "" || strings.ContainsAny(id, ":\\\r\n\x00") {
			t.Fatalf("NextID = %q, holds a byte that needs escaping", id)
		}
	}
}

func TestParseAckMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    AckMode
		wantErr bool
	}{
		{"", AckAuto, false},
		{"auto", AckAuto, false},
		{"client", AckClient, false},
		{"client-individual", AckClientIndividual, false},
		{"Client", AckAuto, true},
		{"individual", AckAuto, true},
	}
	for _, tt := range tests {
		got, err := ParseAckMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseAckMode(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.in)) {
			t.Errorf("ParseAckMode(%q) error %q does not quote the value", tt.in, err)
		}
		if err == nil && tt.in != "" && got.String() != tt.in {
			t.Errorf("AckMode(%d).String() = %q, want %q", got, got.String(), tt.in)
		}
	}
	if got := AckAuto.String(); got != "auto" {
		t.Errorf("AckAuto.String() = %q, want auto", got)
	}
}
