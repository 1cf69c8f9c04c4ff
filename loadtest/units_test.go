package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

func TestStampRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ns   int64
		pub  uint32
	}{
		{"zero", 0, 0},
		{"typical", 1_234_567_890, 42},
		{"largest", 1<<63 - 1, 1<<32 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendStamp(nil, tt.ns, tt.pub)
			if len(b) != stampLen {
				t.Fatalf("len(stamp) = %d, want %d", len(b), stampLen)
			}
			ns, pub, ok := parseStamp(append(b, "padding"...))
			if !ok || ns != tt.ns || pub != tt.pub {
				t.Errorf("parseStamp = %d, %d, %v, want %d, %d, true", ns, pub, ok, tt.ns, tt.pub)
			}
		})
	}
	for _, body := range []string{"", "hello", "T0000000000000000000000g0", strings.Repeat("x", 40)} {
		if _, _, ok := parseStamp([]byte(body)); ok {
			t.Errorf("parseStamp(%q) ok, want not a stamp", body)
		}
	}
}

func TestAppendStampAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = appendStamp(buf[:0], 123, 7) }); n != 0 {
		t.Errorf("appendStamp allocates %v times, want 0", n)
	}
}

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

func TestPacing(t *testing.T) {
	tests := []struct {
		rate float64
		want time.Duration
	}{
		{1.3, 769230769 * time.Nanosecond},
		{500, minPeriod},
		{0.1, maxPeriod},
		{50, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := pacePeriod(tt.rate); got != tt.want {
			t.Errorf("pacePeriod(%v) = %v, want %v", tt.rate, got, tt.want)
		}
	}
	dues := []struct {
		rate    float64
		elapsed time.Duration
		sent    int64
		want    int64
	}{
		{500, 10 * time.Millisecond, 0, 5},
		{500, 25 * time.Millisecond, 5, 7},
		{1.3, 700 * time.Millisecond, 0, 0},
		{1.3, 800 * time.Millisecond, 0, 1},
		{1.3, 10 * time.Second, 13, 0},
		{10, time.Second, 12, 0}, // never negative
	}
	for _, d := range dues {
		if got := due(d.rate, d.elapsed, d.sent); got != d.want {
			t.Errorf("due(%v, %v, %d) = %d, want %d", d.rate, d.elapsed, d.sent, got, d.want)
		}
	}
}

func TestWindow(t *testing.T) {
	w := newWindow(4, 2) // 4 messages per subscriber, 2 subscribers: 8 deliveries
	if got := w.acquire(3); got != 3 {
		t.Fatalf("acquire(3) = %d, want 3", got)
	}
	if got := w.acquire(3); got != 1 {
		t.Fatalf("acquire(3) with 1 free = %d, want 1", got)
	}
	w.release(4) // two messages fully delivered
	if got := w.acquire(5); got != 2 {
		t.Fatalf("acquire(5) after release = %d, want 2", got)
	}
	done := make(chan int64)
	go func() { done <- w.acquire(1) }()
	w.close()
	if got := <-done; got != 0 {
		t.Errorf("acquire on a closed window = %d, want 0", got)
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
		{"ws://127.0.0.1:8080/ws", "http://127.0.0.1:9090/metrics"},
		{"wss://example.com/stomp", "http://example.com:9090/metrics"},
		{"ws://[::1]:8080/ws", "http://[::1]:9090/metrics"},
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
		if got := loopbackTarget(u); got != want {
			t.Errorf("loopbackTarget(%q) = %v, want %v", u, got, want)
		}
	}
	if got := sourceAddr(blockIdle, 0).String(); got != "127.1.0.1" {
		t.Errorf("sourceAddr(idle, 0) = %s, want 127.1.0.1", got)
	}
	if got := sourceAddr(blockStorm, 1).String(); got != "127.0.0.2" {
		t.Errorf("sourceAddr(storm, 1) = %s, want 127.0.0.2", got)
	}
	if got := sourceAddr(blockLoad, 254).String(); got != "127.2.1.1" {
		t.Errorf("sourceAddr(load, 254) = %s, want 127.2.1.1", got)
	}
}

func TestFlagValidation(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"nope"}, `unknown scenario "nope"`},
		{"bad url", []string{"flood", "-url", "http://x/"}, "scheme must be ws or wss"},
		{"negative duration", []string{"throughput", "-duration", "-1s"}, "-duration -1s"},
		{"no load", []string{"flood", "-normal", "0", "-abusers", "0"}, "nothing to run"},
		{"storm off loopback", []string{"handshake-storm", "-url", "ws://10.1.2.3/ws", "-ips", "2"}, "loopback"},
		{"idle sessions", []string{"idle", "-sessions", "0"}, "-sessions 0"},
		{"rooms size", []string{"rooms", "-room-size", "0"}, "-room-size 0"},
		{"rooms heart-beat", []string{"rooms", "-heart-beat", "10ms"}, "-heart-beat 10ms"},
		{"frames per message", []string{"throughput", "-frames-per-message", "-1"}, "-frames-per-message -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestBurstsActive(t *testing.T) {
	b := bursts{every: 2 * time.Second, on: 200 * time.Millisecond}
	for _, tc := range []struct {
		elapsed, want time.Duration
	}{
		{0, 0},
		{100 * time.Millisecond, 100 * time.Millisecond},
		{200 * time.Millisecond, 200 * time.Millisecond},
		{1999 * time.Millisecond, 200 * time.Millisecond},
		{2050 * time.Millisecond, 250 * time.Millisecond},
		{5 * time.Second, 600 * time.Millisecond},
	} {
		if got := b.active(tc.elapsed); got != tc.want {
			t.Errorf("active(%v) = %v, want %v", tc.elapsed, got, tc.want)
		}
	}
	if got := (bursts{}).active(3 * time.Second); got != 3*time.Second {
		t.Errorf("zero bursts: active(3s) = %v, want 3s", got)
	}
}
