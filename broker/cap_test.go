package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

// TestSubscribeMax steps a destination capped at two subscriptions:
// the third is refused, an Unsubscribe frees a place, and a cap of 0
// is none.
func TestSubscribeMax(t *testing.T) {
	t.Parallel()
	b := New()
	r := &recorder{}
	sub := func(id string) *Subscription {
		return NewSubscription(id, "/topic/game.1", AckAuto, stompframe.V12, r)
	}
	s1, s2, s3 := sub("1"), sub("2"), sub("3")
	steps := []struct {
		op        string // subscribe, unsubscribe
		s         *Subscription
		max       int
		wantFirst bool
		wantOK    bool
		wantSubs  int
	}{
		{op: "subscribe", s: s1, max: 2, wantFirst: true, wantOK: true, wantSubs: 1},
		{op: "subscribe", s: s2, max: 2, wantOK: true, wantSubs: 2},
		{op: "subscribe", s: s3, max: 2, wantSubs: 2},
		{op: "unsubscribe", s: s1, wantSubs: 1},
		{op: "subscribe", s: s3, max: 2, wantOK: true, wantSubs: 2},
		{op: "subscribe", s: s1, max: 0, wantOK: true, wantSubs: 3},
	}
	for i, st := range steps {
		switch st.op {
		case "subscribe":
			first, ok := b.SubscribeMax(st.s, st.max)
			if first != st.wantFirst || ok != st.wantOK {
				t.Fatalf("step %d: SubscribeMax(%s, %d) = %v, %v; want %v, %v", i, st.s.ID, st.max, first, ok, st.wantFirst, st.wantOK)
			}
		case "unsubscribe":
			if removed, _ := b.Unsubscribe(st.s); !removed {
				t.Fatalf("step %d: Unsubscribe(%s) removed nothing", i, st.s.ID)
			}
		}
		if got := b.Subscribers("/topic/game.1"); got != st.wantSubs {
			t.Fatalf("step %d: Subscribers = %d, want %d", i, got, st.wantSubs)
		}
	}
	// The refused subscription was never added: unsubscribing it is a
	// no-op that leaves the others.
	if _, n := publish(b, "/topic/game.1", "x"); n != 3 {
		t.Errorf("Publish delivered %d, want 3", n)
	}
}

// TestSubscribeMaxConcurrent races 64 subscribers for a cap of 5: the
// destination never holds more than 5, and exactly 5 get in.
func TestSubscribeMaxConcurrent(t *testing.T) {
	t.Parallel()
	const max, racers = 5, 64
	b := New()
	r := &recorder{}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewSubscription(strconv.Itoa(i), "/topic/capped", AckAuto, stompframe.V12, r)
			if _, ok := b.SubscribeMax(s, max); ok {
				admitted.Add(1)
			}
			if n := b.Subscribers("/topic/capped"); n > max {
				t.Errorf("Subscribers = %d, over the cap %d", n, max)
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != max {
		t.Errorf("%d subscriptions admitted, want %d", got, max)
	}
}
