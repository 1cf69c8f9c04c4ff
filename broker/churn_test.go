package broker

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

// TestChurnCostsNoCopy subscribes and unsubscribes on a destination with
// 2000 subscriptions: a change must not copy the subscriber list, so it
// allocates nothing once the list has its capacity.
func TestChurnCostsNoCopy(t *testing.T) {
	b := New()
	r := &recorder{}
	for i := range 2000 {
		subscribe(b, fmt.Sprint(i), "/topic/busy", r)
	}
	sub := NewSubscription("churn", "/topic/busy", AckAuto, stompframe.V12, r)
	allocs := testing.AllocsPerRun(1000, func() {
		b.Subscribe(sub)
		b.Unsubscribe(sub)
	})
	if allocs > 0 {
		t.Fatalf("SUBSCRIBE+UNSUBSCRIBE on a 2000-subscriber topic allocates %.1f times, want 0", allocs)
	}
}

// TestSubscriptionSetModel runs random subscribes, unsubscribes and
// publishes against a map model: every publish reaches exactly the
// subscriptions the model holds.
func TestSubscriptionSetModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	b := New()
	c := &counter{n: map[string]int{}}
	all := make([]*Subscription, 64)
	for i := range all {
		all[i] = NewSubscription(fmt.Sprint(i), "/topic/m", AckAuto, stompframe.V12, c)
	}
	model := map[*Subscription]bool{}
	for step := range 5000 {
		sub := all[rng.IntN(len(all))]
		switch rng.IntN(3) {
		case 0:
			if !model[sub] {
				b.Subscribe(sub)
				model[sub] = true
			}
		case 1:
			removed, last := b.Unsubscribe(sub)
			if removed != model[sub] {
				t.Fatalf("step %d: Unsubscribe removed = %v, model says subscribed = %v", step, removed, model[sub])
			}
			delete(model, sub)
			if last != (len(model) == 0) {
				t.Fatalf("step %d: last = %v with %d left", step, last, len(model))
			}
		default:
			if n := b.Publish(NewMessage(b.NextID(), send("x", "destination", "/topic/m"))); n != len(model) {
				t.Fatalf("step %d: Publish delivered %d, model holds %d", step, n, len(model))
			}
		}
		if got := b.Subscribers("/topic/m"); got != len(model) {
			t.Fatalf("step %d: Subscribers = %d, want %d", step, got, len(model))
		}
	}
}

// BenchmarkSubscribeChurn prices one SUBSCRIBE+UNSUBSCRIBE pair on a
// destination with n subscriptions: flat in n.
func BenchmarkSubscribeChurn(b *testing.B) {
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			br := New()
			r := &recorder{}
			for i := range n {
				subscribe(br, fmt.Sprint(i), "/topic/busy", r)
			}
			sub := NewSubscription("churn", "/topic/busy", AckAuto, stompframe.V12, r)
			b.ReportAllocs()
			for b.Loop() {
				br.Subscribe(sub)
				br.Unsubscribe(sub)
			}
		})
	}
}
