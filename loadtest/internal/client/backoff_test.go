package client

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// fixedRand returns the values of vals in turn, then the last one.
func fixedRand(vals ...float64) func() float64 {
	i := 0
	return func() float64 {
		v := vals[min(i, len(vals)-1)]
		i++
		return v
	}
}

func TestBackoffCeilingGrowsToCap(t *testing.T) {
	b := Backoff{Rand: fixedRand(0.999)}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i, w := range want {
		w *= time.Second
		if got := b.Ceiling(); got != w {
			t.Fatalf("after %d failures: Ceiling() = %v, want %v", i, got, w)
		}
		if d := b.Next(0); d < 0 || d >= w {
			t.Fatalf("after %d failures: Next(0) = %v, want in [0, %v)", i, d, w)
		}
	}
	b.Reset()
	if got := b.Ceiling(); got != BackoffBase || b.Failures() != 0 {
		t.Errorf("after Reset: Ceiling() = %v, failures %d; want %v, 0", got, b.Failures(), BackoffBase)
	}
}

func TestBackoffFullJitter(t *testing.T) {
	tests := []struct {
		name       string
		base, cap  time.Duration
		failures   int
		r          float64
		retryAfter time.Duration
		want       time.Duration
	}{
		{"first retry, low draw", 0, 0, 0, 0, 0, 0},
		{"first retry, middle draw", 0, 0, 0, 0.5, 0, 500 * time.Millisecond},
		{"third retry", 0, 0, 2, 0.25, 0, time.Second},
		{"capped", 0, 0, 20, 0.5, 0, 15 * time.Second},
		{"own base and cap", 100 * time.Millisecond, 300 * time.Millisecond, 3, 0.5, 0, 150 * time.Millisecond},
		{"retry-after, no spread drawn", 0, 0, 0, 0, 7 * time.Second, 7 * time.Second},
		{"retry-after plus a fraction", 0, 0, 4, 0.75, 7 * time.Second, 7750 * time.Millisecond},
		{"retry-after above the bound", 0, 0, 0, 0.5, 48 * time.Hour, RetryAfterMax + 500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Backoff{Base: tt.base, Cap: tt.cap, Rand: fixedRand(tt.r), failures: tt.failures}
			if got := b.Next(tt.retryAfter); got != tt.want {
				t.Errorf("Next(%v) = %v, want %v", tt.retryAfter, got, tt.want)
			}
			if b.Failures() != tt.failures+1 {
				t.Errorf("failures after Next: %d, want %d", b.Failures(), tt.failures+1)
			}
		})
	}
}

func TestBackoffRetryAfterNeverEarlier(t *testing.T) {
	// Whatever the draw, a known Retry-After is a lower bound and the
	// spread stays under a second.
	for _, r := range []float64{0, 0.1, 0.5, 0.999999} {
		b := Backoff{Rand: fixedRand(r)}
		d := b.Next(3 * time.Second)
		if d < 3*time.Second || d >= 4*time.Second {
			t.Errorf("rand %v: Next(3s) = %v, want in [3s, 4s)", r, d)
		}
	}
}

func TestRetryAfterOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"429", &HandshakeError{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second}, 2 * time.Second},
		{"503 wrapped", fmt.Errorf("dial: %w", &HandshakeError{Status: http.StatusServiceUnavailable, RetryAfter: 5 * time.Second}), 5 * time.Second},
		{"403 ignores its header", &HandshakeError{Status: http.StatusForbidden, RetryAfter: 5 * time.Second}, 0},
		{"ERROR frame", fmt.Errorf("waiting: %w", &ErrorFrame{Message: "server busy", RetryAfter: 4 * time.Second}), 4 * time.Second},
		{"ERROR frame without", &ErrorFrame{Message: "unauthorized"}, 0},
		{"other", errors.New("connection refused"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.err); got != tt.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 12 ", 12 * time.Second},
		{"0", 0},
		{"-1", 0},
		{"1.5", 0},
		{"soon", 0},
		{"99999999999999999999", RetryAfterMax},
		{"86400", RetryAfterMax},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
