package server

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

// BenchmarkDeliver measures what one MESSAGE costs a subscriber's
// session on the publisher's side: Deliver queuing it (bounds checked,
// bytes counted) and the writer taking the queue and finishing with it,
// without a socket. Every 16 deliveries the writer's part runs once, as a
// flush does for a busy subscriber. The peer is BenchmarkPublish in
// package broker, whose subscribers only encode.
func BenchmarkDeliver(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run("subs="+strconv.Itoa(n), func(b *testing.B) { benchDeliver(b, n, 16, false) })
	}
}

// BenchmarkDeliverLatest is BenchmarkDeliver for latest-value
// subscriptions beside ordinary ones, with the writer taking the queue
// every 16 deliveries (take=16: for a latest-value subscription 15 of
// 16 MESSAGEs replace the waiting one, what a slow reader's session
// does) and after every delivery (take=1: each is queued anew, what a
// reader that keeps up does).
func BenchmarkDeliverLatest(b *testing.B) {
	for _, path := range []string{"ordinary", "latest"} {
		for _, take := range []int{16, 1} {
			for _, n := range []int{1, 100} {
				b.Run(fmt.Sprintf("%s/take=%d/subs=%d", path, take, n), func(b *testing.B) {
					benchDeliver(b, n, take, path == "latest")
				})
			}
		}
	}
}

// benchDeliver delivers a 100-byte MESSAGE to n sessions per iteration,
// through latest-value subscriptions when latest is set, and runs the
// writer's part every take iterations.
func benchDeliver(b *testing.B, n, take int, latest bool) {
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	subs := make([]*broker.Subscription, n)
	sessions := make([]*session, n)
	for i := range sessions {
		s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
		// A writer is taken to run, so Deliver only queues.
		s.box.writing = true
		sessions[i] = s
		var to broker.Subscriber = s
		if latest {
			to = &latestSubscriber{s: s, rule: "state"}
		}
		subs[i] = broker.NewSubscription(strconv.Itoa(i), "/topic/room.42", broker.AckAuto, stompframe.V12, to)
	}
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: bytes.Repeat([]byte("x"), 100)}
	f.Add("destination", "/topic/room.42")
	f.Add("content-type", "application/json")
	m := broker.NewMessage("1", f)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for _, sub := range subs {
			if !sub.Subscriber.Deliver(sub, m, nil) {
				b.Fatal("Deliver refused")
			}
		}
		if i%take == take-1 {
			for _, s := range sessions {
				s.box.mu.Lock()
				items := s.box.takeLocked(nil)
				clear(items)
				recycleQueue(items)
				s.box.writtenLocked()
				s.box.mu.Unlock()
			}
		}
	}
}
