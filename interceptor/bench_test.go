package interceptor

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// Benchmarks of the per-frame path: the server's standard chain,
// principal ─► session limiter ─► metrics, on one SEND frame per call.
// The reference is the session's limiter alone (BenchmarkFixedWindowAllowAt),
// the floor under the chain's cost.

// countingObserver counts frames with atomics, as a metrics collector
// does.
type countingObserver struct {
	received, dropped, passed atomic.Uint64
}

func (o *countingObserver) FrameReceived(string)                 { o.received.Add(1) }
func (o *countingObserver) FrameDropped(string, *outcome.Reason) { o.dropped.Add(1) }
func (o *countingObserver) FramePassed(string)                   { o.passed.Add(1) }

// benchChain returns the standard chain with default limits.
func benchChain(b *testing.B, obs *countingObserver) *Chain {
	b.Helper()
	p, err := NewPrincipalStage(PrincipalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := NewLimitStage(LimitConfig{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	return NewChain(obs, p, l)
}

// connected returns a session that has passed CONNECT through c.
func connected(b *testing.B, c *Chain, id string) *Session {
	b.Helper()
	s := &Session{ID: id}
	if r := c.Handle(s, frame("CONNECT"), t0); r.Outcome != Pass {
		b.Fatalf("CONNECT = %+v", r)
	}
	return s
}

// benchSend is a SEND as a chat client sends it.
func benchSend() *stompframe.Frame {
	f := frame("SEND", "destination", "/topic/room.42", "content-type", "application/json")
	f.Body = []byte(`{"type":"chat","text":"hello, room"}`)
	return f
}

// perFrame spaces frames so that the default limit (20 per second) passes
// every one of them.
const perFrame = 50 * time.Millisecond

// BenchmarkChain passes every frame: one SEND every 50ms of frame time.
func BenchmarkChain(b *testing.B) {
	obs := &countingObserver{}
	c := benchChain(b, obs)
	s := connected(b, c, "1")
	f := benchSend()
	b.ReportAllocs()
	b.ResetTimer()
	now := t0
	for range b.N {
		now = now.Add(perFrame)
		if r := c.Handle(s, f, now); r.Outcome != Pass {
			b.Fatalf("Handle = %+v, want pass", r)
		}
	}
}

// BenchmarkChainDrop is a flood: every frame at the same instant, so all
// but the first 20 are dropped by the limiter.
func BenchmarkChainDrop(b *testing.B) {
	obs := &countingObserver{}
	c := benchChain(b, obs)
	s := connected(b, c, "1")
	f := benchSend()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.Handle(s, f, t0)
	}
}

// BenchmarkChainParallel runs one session per goroutine through one
// shared chain, as the server's reader goroutines do.
func BenchmarkChainParallel(b *testing.B) {
	obs := &countingObserver{}
	c := benchChain(b, obs)
	var ids atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s := &Session{ID: "s" + string(rune('0'+ids.Add(1)))}
		c.Handle(s, frame("CONNECT"), t0)
		f := benchSend()
		now := t0
		for pb.Next() {
			now = now.Add(perFrame)
			if r := c.Handle(s, f, now); r.Outcome != Pass {
				b.Errorf("Handle = %+v, want pass", r)
				return
			}
		}
	})
}

// BenchmarkChainPermissions adds destination patterns to the principal,
// so SEND frames are matched against them.
func BenchmarkChainPermissions(b *testing.B) {
	obs := &countingObserver{}
	c := benchChain(b, obs)
	s := connected(b, c, "1")
	s.Principal = &Principal{Name: "alice", Send: []string{"/topic/lobby", "/topic/room.*"}}
	f := benchSend()
	b.ReportAllocs()
	b.ResetTimer()
	now := t0
	for range b.N {
		now = now.Add(perFrame)
		if r := c.Handle(s, f, now); r.Outcome != Pass {
			b.Fatalf("Handle = %+v, want pass", r)
		}
	}
}

// BenchmarkFixedWindowAllowAt is the reference: the session limiter alone.
func BenchmarkFixedWindowAllowAt(b *testing.B) {
	l := sessionlimit.NewFixedWindow(sessionlimit.DefaultLimit, sessionlimit.DefaultWindow)
	b.ReportAllocs()
	now := t0
	for range b.N {
		now = now.Add(perFrame)
		l.AllowAt(now)
	}
}

func BenchmarkMatchDestination(b *testing.B) {
	long := strings.Repeat("ab", 2048)
	cases := []struct {
		name, pattern, dest string
	}{
		{"literal", "/topic/room.42", "/topic/room.42"},
		{"star", "/topic/room.*", "/topic/room.42"},
		{"doublestar", "/topic/**.chat", "/topic/game/room.42.chat"},
		{"worst/4096", "**a**b**a**c**", long},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				MatchDestination(c.pattern, c.dest)
			}
		})
	}
}
