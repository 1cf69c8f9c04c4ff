package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// The peer in this file is the obvious alternative: resolving the child
// with CounterVec.WithLabelValues on every call, which hashes the label
// values and looks the child up under a lock each time. Metrics resolves
// children once in New.

func benchMetrics(b *testing.B, cfg Config) *Metrics {
	b.Helper()
	m, err := New(prometheus.NewRegistry(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkFramePassed(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.FramePassed("SEND")
	}
}

func BenchmarkFramePassedParallel(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.FramePassed("SEND")
		}
	})
}

// BenchmarkFramePassedWithLabelValues is the peer: the same counter,
// resolved per call.
func BenchmarkFramePassedWithLabelValues(b *testing.B) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "peer_total", Help: "peer"}, []string{"command"})
	b.ReportAllocs()
	for b.Loop() {
		vec.WithLabelValues("SEND").Inc()
	}
}

func BenchmarkFramePassedWithLabelValuesParallel(b *testing.B) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "peer_total", Help: "peer"}, []string{"command"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			vec.WithLabelValues("SEND").Inc()
		}
	})
}

func BenchmarkFrameDropped(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.FrameDropped("SEND", DropRateLimit)
	}
}

func BenchmarkFrameDroppedParallel(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.FrameDropped("SEND", DropRateLimit)
		}
	})
}

// BenchmarkFrameDroppedWithLabelValues is the peer for the two-label
// counter.
func BenchmarkFrameDroppedWithLabelValues(b *testing.B) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "peer_total", Help: "peer"}, []string{"command", "reason"})
	b.ReportAllocs()
	for b.Loop() {
		vec.WithLabelValues("SEND", "rate_limit").Inc()
	}
}

// BenchmarkFrameAccounting is one inbound frame's full bill: received and
// passed.
func BenchmarkFrameAccounting(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.FrameReceived("SEND")
		m.FramePassed("SEND")
	}
}

// prefixes returns n distinct prefixes such as "/topic/p07.".
func prefixes(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("/topic/p%02d.", i)
	}
	return ps
}

func BenchmarkDelivered(b *testing.B) {
	for _, bc := range []struct {
		name     string
		prefixes int
		dest     string
	}{
		{"prefixes=0", 0, "/topic/room.42"},
		{"prefixes=5/hit", 5, "/topic/p02.room42"},
		{"prefixes=50/miss", MaxDestinationPrefixes, "/queue/nomatch"},
	} {
		m := benchMetrics(b, Config{DestinationPrefixes: prefixes(bc.prefixes)})
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Delivered(bc.dest, 9)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Delivered(bc.dest, 9)
				}
			})
		})
	}
}

func BenchmarkLimiterDecision(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.LimiterDecision("redis", 300*time.Microsecond)
	}
}

func BenchmarkSessionOpenedClosed(b *testing.B) {
	m := benchMetrics(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.SessionOpened()
		m.SessionClosed(outcome.CloseNormal)
	}
}

// The per-frame methods must not allocate; this keeps that true without a
// benchmark run.
func TestHotPathAllocations(t *testing.T) {
	m, err := New(prometheus.NewRegistry(), Config{DestinationPrefixes: prefixes(MaxDestinationPrefixes)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    func()
	}{
		{"FrameReceived", func() { m.FrameReceived("SEND") }},
		{"FrameReceived unknown", func() { m.FrameReceived("HELLO") }},
		{"FramePassed", func() { m.FramePassed("SUBSCRIBE") }},
		{"FrameDropped", func() { m.FrameDropped("SEND", DropRateLimit) }},
		{"Delivered hit", func() { m.Delivered("/topic/p49.x", 3) }},
		{"Delivered miss", func() { m.Delivered("/queue/x", 3) }},
		{"ProtocolErrorClose", func() { m.ProtocolErrorClose("frame_too_large") }},
		{"Handshake", func() { m.Handshake(outcome.HandshakeAccepted) }},
		{"LimiterDecision", func() { m.LimiterDecision("memory", time.Millisecond) }},
		{"LimiterStoreError", func() { m.LimiterStoreError("redis") }},
		{"SetLimiterFallback", func() { m.SetLimiterFallback(true) }},
		{"SessionOpened", func() { m.SessionOpened() }},
		{"SessionClosed", func() { m.SessionClosed(outcome.CloseClientGone) }},
		{"FrameDropped by reason string", func() { m.FrameDropped("SEND", DropReasonOf(outcome.DropRateLimit)) }},
		{"RelayMessages", func() { m.RelayMessages(RelayDirectionOf("in"), 1) }},
		{"RelayDropped", func() { m.RelayDropped(RelayDropReasonOf("queue_full"), 1) }},
		{"AppHandled", func() { m.AppHandled("ok") }},
		{"APIRequest", func() { m.APIRequest("publish", 202) }},
		{"UserDelivered", func() { m.UserDelivered() }},
		{"SessionCapAcquired", func() { m.SessionCapAcquired(CapScopeOf("ip")) }},
		{"HTTPTimedOut", func() { m.HTTPTimedOut(HTTPTimeoutRead) }},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(100, tt.f); got != 0 {
			t.Errorf("%s: %v allocs per call, want 0", tt.name, got)
		}
	}
}
