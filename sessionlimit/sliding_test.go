package sessionlimit

import (
	"testing"
	"time"
)

func TestSlidingWindowSteps(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tests := []struct {
		name   string
		limit  int
		window time.Duration
		steps  []step
	}{
		{
			name:  "previous window weighs in",
			limit: 4, window: time.Second,
			steps: []step{
				{0, true}, {0, true}, {0, true}, {0, true}, {0, false},
				{500 * ms, false},
				{1000 * ms, false},                    // estimate 4×1 + 0
				{1250 * ms, true}, {1250 * ms, false}, // 4×0.75 + 0, then 4×0.75 + 1
				{1500 * ms, true}, {1500 * ms, false}, // 4×0.5 + 1
				{1750 * ms, true}, {1750 * ms, false}, // 4×0.25 + 2
				{2000 * ms, true}, {2000 * ms, false}, // 3×1 + 0: windows back to back
				{2999 * ms, true}, {2999 * ms, true}, {2999 * ms, false},
			},
		},
		{
			name:  "idle two windows starts afresh",
			limit: 2, window: time.Second,
			steps: []step{
				{0, true}, {0, true}, {0, false},
				{2300 * ms, true}, {2300 * ms, true}, {2300 * ms, false},
				{3299 * ms, false},
				{3300 * ms, false}, // a new window at 3.3s, previous count 2
				{3800 * ms, true}, {3800 * ms, false},
			},
		},
		{
			name:  "refused frames are not counted",
			limit: 1, window: time.Second,
			steps: join(
				[]step{{0, true}},
				repeat(500*ms, 100, false),
				[]step{{2000 * ms, true}},
			),
		},
		{
			name:  "earlier frame counts at the window start",
			limit: 2, window: time.Second,
			steps: []step{
				{0, true}, {0, true},
				{1500 * ms, true}, // 2×0.5 + 0
				{900 * ms, false}, // counted at 1s: 2×1 + 1
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, NewSlidingWindow(tt.limit, tt.window), tt.steps)
		})
	}
}
