package server

import (
	"bytes"
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
		b.Run("subs="+strconv.Itoa(n), func(b *testing.B) {
			srv, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			sessions := make([]*session, n)
			subs := make([]*broker.Subscription, n)
			for i := range sessions {
				s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
				// A writer is taken to run, so Deliver only queues.
				s.box.writing = true
				sessions[i] = s
				subs[i] = broker.NewSubscription(strconv.Itoa(i), "/topic/room.42", broker.AckAuto, stompframe.V12, s)
			}
			f := &stompframe.Frame{Command: stompframe.CommandSend, Body: bytes.Repeat([]byte("x"), 100)}
			f.Add("destination", "/topic/room.42")
			f.Add("content-type", "application/json")
			m := broker.NewMessage("1", f)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for j, s := range sessions {
					if !s.Deliver(subs[j], m, nil) {
						b.Fatal("Deliver refused")
					}
				}
				if i%16 == 15 {
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
		})
	}
}
