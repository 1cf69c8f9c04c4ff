package load

import (
	"strings"
	"testing"
	"time"
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
			if len(b) != StampLen {
				t.Fatalf("len(stamp) = %d, want %d", len(b), StampLen)
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
		if got := PacePeriod(tt.rate); got != tt.want {
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
		if got := Due(d.rate, d.elapsed, d.sent); got != d.want {
			t.Errorf("due(%v, %v, %d) = %d, want %d", d.rate, d.elapsed, d.sent, got, d.want)
		}
	}
}

func TestWindow(t *testing.T) {
	w := NewWindow(4, 2) // 4 messages per subscriber, 2 subscribers: 8 deliveries
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
	w.Close()
	if got := <-done; got != 0 {
		t.Errorf("acquire on a closed window = %d, want 0", got)
	}
}

func TestBurstsActive(t *testing.T) {
	b := Bursts{Every: 2 * time.Second, On: 200 * time.Millisecond}
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
	if got := (Bursts{}).active(3 * time.Second); got != 3*time.Second {
		t.Errorf("zero bursts: active(3s) = %v, want 3s", got)
	}
}
