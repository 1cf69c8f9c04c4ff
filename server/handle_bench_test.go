package server

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

// discard is a subscriber that takes every message and keeps none.
type discard struct{}

func (discard) Deliver(*broker.Subscription, *broker.Message, *broker.Batch) bool { return true }

// BenchmarkHandleSend measures the reader's side of one SEND from a
// connected session whose credentials expire: validation, the chain,
// the expiry check, the message and the broker's fan-out to one
// subscriber that keeps nothing.
func BenchmarkHandleSend(b *testing.B) {
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
	s.connected.Store(true)
	s.st.Principal = &interceptor.Principal{Name: "alice", Expires: t0.Add(time.Hour)}
	b.Cleanup(func() {
		if s.expiry != nil {
			s.expiry.Stop()
		}
	})
	srv.cfg.Broker.Subscribe(broker.NewSubscription("0", "/topic/room", broker.AckAuto, stompframe.V12, discard{}))
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("hello, room")}
	f.Add("destination", "/topic/room")
	f.Add("content-type", "text/plain")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if s.handle(f, t0.Add(time.Duration(i))) {
			b.Fatal("session ended")
		}
	}
}
