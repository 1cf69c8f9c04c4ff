package server

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// timingObserver is an Observer that times deliveries and keeps nothing,
// so that a benchmark measures what timing costs the server itself.
type timingObserver struct{ nopObserver }

func (timingObserver) MessageWritten(string, time.Duration, time.Duration) {}

// BenchmarkHandleSendTimed is BenchmarkHandleSend with deliveries timed
// (a DeliveryObserver): the SEND's arrival stamped from its read, and the
// broker's one clock read for its fan-out.
func BenchmarkHandleSendTimed(b *testing.B) {
	for _, timed := range []bool{false, true} {
		b.Run("timed="+strconv.FormatBool(timed), func(b *testing.B) {
			cfg := Config{}
			if timed {
				cfg.Observer = timingObserver{}
			}
			srv, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
			s.connected.Store(true)
			s.st.Principal = &interceptor.Principal{Name: "alice"}
			srv.cfg.Broker.Subscribe(broker.NewSubscription("0", "/topic/room", broker.AckAuto, stompframe.V12, discard{}))
			f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("hello, room")}
			f.Add("destination", "/topic/room")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if s.handle(f, t0.Add(time.Duration(i))) {
					b.Fatal("session ended")
				}
			}
		})
	}
}

// BenchmarkObserveWritten measures the writer's part of timing, per
// MESSAGE: 9 messages of one write (a room's worth) reported to a
// DeliveryObserver, against none.
func BenchmarkObserveWritten(b *testing.B) {
	for _, timed := range []bool{false, true} {
		b.Run("timed="+strconv.FormatBool(timed), func(b *testing.B) {
			cfg := Config{}
			if timed {
				cfg.Observer = timingObserver{}
			}
			srv, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
			f := &stompframe.Frame{Command: stompframe.CommandSend, Body: make([]byte, 100)}
			f.Add("destination", "/topic/room")
			sub := broker.NewSubscription("0", "/topic/room", broker.AckAuto, stompframe.V12, s)
			items := make([]outItem, 9)
			now := time.Now().UnixNano()
			for i := range items {
				m := broker.NewMessage(strconv.Itoa(i), f)
				m.SetArrival(outcome.DeliveryLocal, now-int64(time.Millisecond))
				items[i] = outItem{msg: m, sub: sub}
			}
			b.ReportAllocs()
			for b.Loop() {
				s.observeWritten(items, now)
			}
		})
	}
}
