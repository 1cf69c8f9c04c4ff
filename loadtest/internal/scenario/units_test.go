package scenario

import (
	"testing"

	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// The handshake package's documented example: 3r/s, burst 5.
func TestLeakyBucket(t *testing.T) {
	steps := []struct {
		ms   int64
		want bool
	}{
		{0, true}, {0, true}, {0, true}, {0, true}, {0, true}, {0, true},
		{0, false},
		{333, false},
		{334, true},
		{334, false},
		{1000, true},
	}
	b := leakyBucket{rate: 3000, burst: 5}
	for i, s := range steps {
		if got := b.allow(s.ms); got != s.want {
			t.Errorf("step %d: allow(%dms) = %v, want %v", i, s.ms, got, s.want)
		}
	}
}

func TestExpectedAccepted(t *testing.T) {
	every := func(n int, stepMS int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i) * stepMS
		}
		return out
	}
	tests := []struct {
		name       string
		times      []int64
		want       int
		closedForm int
	}{
		{"burst at once", every(20, 0), 6, 6},
		{"10/s for 2s", every(20, 100), 11, 11},
		// Steady at the rate: everything passes.
		{"3/s", every(9, 334), 9, 9},
		{"none", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expectedAccepted(3, 5, tt.times); got != tt.want {
				t.Errorf("expectedAccepted = %d, want %d", got, tt.want)
			}
			span := 0.0
			if n := len(tt.times); n > 0 {
				span = float64(tt.times[n-1]) / 1000
			}
			if got := closedFormAccepted(3, 5, len(tt.times), span); got != tt.closedForm {
				t.Errorf("closedFormAccepted = %d, want %d", got, tt.closedForm)
			}
		})
	}
}

func TestHandshakeDeltas(t *testing.T) {
	before := scrape.Samples{`stompgate_handshakes_total{result="accepted"}`: 6, `stompgate_handshakes_total{result="rejected_limit"}`: 1}
	after := scrape.Samples{`stompgate_handshakes_total{result="accepted"}`: 17, `stompgate_handshakes_total{result="rejected_limit"}`: 70}
	got := handshakeDeltas(before, after)
	if got["accepted"] != 11 || got["rejected_limit"] != 69 {
		t.Errorf("handshakeDeltas = %v, want accepted 11, rejected_limit 69", got)
	}
}

func TestURLs(t *testing.T) {
	tests := []struct{ ws, metrics string }{
		{"ws://127.0.0.1:8080/ws", "http://127.0.0.1:8082/metrics"},
		{"wss://example.com/stomp", "http://example.com:8082/metrics"},
		{"ws://[::1]:8080/ws", "http://[::1]:8082/metrics"},
	}
	for _, tt := range tests {
		if got := metricsURLFrom(tt.ws); got != tt.metrics {
			t.Errorf("metricsURLFrom(%q) = %q, want %q", tt.ws, got, tt.metrics)
		}
	}
	for u, want := range map[string]bool{
		"ws://127.0.0.1:8080/ws": true, "ws://localhost/ws": true, "ws://[::1]:80/": true,
		"ws://10.0.0.1/ws": false, "wss://example.com/": false,
	} {
		if got := LoopbackTarget(u); got != want {
			t.Errorf("loopbackTarget(%q) = %v, want %v", u, got, want)
		}
	}
	if got := SourceAddr(blockIdle, 0).String(); got != "127.1.0.1" {
		t.Errorf("sourceAddr(idle, 0) = %s, want 127.1.0.1", got)
	}
	if got := SourceAddr(blockStorm, 1).String(); got != "127.0.0.2" {
		t.Errorf("sourceAddr(storm, 1) = %s, want 127.0.0.2", got)
	}
	if got := SourceAddr(blockLoad, 254).String(); got != "127.2.1.1" {
		t.Errorf("sourceAddr(load, 254) = %s, want 127.2.1.1", got)
	}
}
