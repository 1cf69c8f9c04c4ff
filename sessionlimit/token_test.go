package sessionlimit

import (
	"testing"
	"time"
)

func TestTokenBucketSteps(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tests := []struct {
		name   string
		limit  int
		window time.Duration
		steps  []step
	}{
		{
			name:  "burst of capacity then one per 100ms",
			limit: 10, window: time.Second,
			steps: join(
				repeat(0, 10, true),
				[]step{
					{0, false}, {99 * ms, false},
					{100 * ms, true}, {100 * ms, false},
					{250 * ms, true}, {250 * ms, false}, // half a token left over
					{300 * ms, true}, {300 * ms, false},
				},
				repeat(10*time.Second, 10, true), // refilled, not beyond capacity
				[]step{{10 * time.Second, false}},
			),
		},
		{
			name:  "starts full",
			limit: 3, window: time.Hour,
			steps: []step{{0, true}, {0, true}, {0, true}, {0, false}, {20 * time.Minute, true}, {20 * time.Minute, false}},
		},
		{
			name:  "rounding never refills early",
			limit: 3, window: time.Second, // one token per 333,333,334ns
			steps: []step{
				{0, true}, {0, true}, {0, true},
				{333333333, false}, {333333334, true},
			},
		},
		{
			name:  "earlier frame gets no extra tokens",
			limit: 2, window: time.Second,
			steps: []step{{time.Second, true}, {time.Second, true}, {0, false}, {1500 * ms, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, NewTokenBucket(tt.limit, tt.window), tt.steps)
		})
	}
}

// TestTokenBucketRate offers a frame every millisecond, far above the limit,
// and expects the capacity plus the refill rate to pass.
func TestTokenBucketRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit  int
		window time.Duration
		span   time.Duration
		want   int
	}{
		// 10 at once, then one per 100ms for 10s: at 100ms, 200ms, ... 9.9s.
		{10, time.Second, 10 * time.Second, 10 + 99},
		{20, time.Second, 5 * time.Second, 20 + 99},
		{1, 250 * time.Millisecond, time.Second, 1 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.window.String(), func(t *testing.T) {
			t.Parallel()
			l := NewTokenBucket(tt.limit, tt.window)
			passed := 0
			for at := time.Duration(0); at < tt.span; at += time.Millisecond {
				if l.AllowAt(t0.Add(at)) {
					passed++
				}
			}
			if passed != tt.want {
				t.Errorf("%d passed in %v, want %d", passed, tt.span, tt.want)
			}
		})
	}
}

func TestTokenInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit  int32
		window int64
		want   int64
	}{
		{20, int64(time.Second), 50_000_000},
		{3, int64(time.Second), 333_333_334},
		{7, 7, 1},
		{7, 1, 1},
		{0, 0, 0},
	}
	for _, tt := range tests {
		if got := tokenInterval(tt.limit, tt.window); got != tt.want {
			t.Errorf("tokenInterval(%d, %d) = %d, want %d", tt.limit, tt.window, got, tt.want)
		}
	}
}
