package sessionlimit

import (
	"testing"
	"time"
)

func TestFixedWindowSteps(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tests := []struct {
		name   string
		limit  int
		window time.Duration
		steps  []step
	}{
		{
			name:  "window opens at the first frame",
			limit: 3, window: time.Second,
			steps: []step{
				{0, true}, {0, true}, {0, true}, {0, false},
				{900 * ms, false}, {999 * ms, false},
				{1000 * ms, true}, // expired: a new window opens at t0+1s
				{1500 * ms, true}, {1999 * ms, true}, {1999 * ms, false},
				{2000 * ms, true},
			},
		},
		{
			name:  "idle session realigns to its next frame",
			limit: 2, window: time.Second,
			steps: []step{
				{0, true}, {0, true}, {0, false},
				{10300 * ms, true}, // opens [10.3s, 11.3s), not [10s, 11s)
				{11000 * ms, true}, {11299 * ms, false},
				{11300 * ms, true},
			},
		},
		{
			name:  "refused frames are not counted",
			limit: 1, window: time.Second,
			steps: join(
				[]step{{0, true}},
				repeat(500*ms, 100, false),
				[]step{{1000 * ms, true}, {1001 * ms, false}},
			),
		},
		{
			name:  "earlier frame counts in the current window",
			limit: 2, window: time.Second,
			steps: []step{
				{1000 * ms, true},
				{500 * ms, true}, // before the window's start: counted in it
				{1000 * ms, false},
				{1999 * ms, false},
				{2000 * ms, true},
			},
		},
		{
			name:  "limit one",
			limit: 1, window: 10 * ms,
			steps: []step{
				{0, true}, {0, false}, {9 * ms, false},
				{10 * ms, true}, {19 * ms, false}, {20 * ms, true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, NewFixedWindow(tt.limit, tt.window), tt.steps)
		})
	}
}

// TestFixedWindowExactlyLimitPerWindow sends three times the limit, evenly
// spread, through consecutive windows and expects exactly the limit to pass
// in each.
func TestFixedWindowExactlyLimitPerWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		limit  int
		window time.Duration
	}{
		{1, time.Second},
		{20, time.Second},
		{5, 100 * time.Millisecond},
		{1000, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.window.String(), func(t *testing.T) {
			t.Parallel()
			l := NewFixedWindow(tt.limit, tt.window)
			n := 3 * tt.limit
			gap := tt.window / time.Duration(n)
			for k := range 10 {
				passed := 0
				for i := range n {
					if l.AllowAt(t0.Add(time.Duration(k)*tt.window + time.Duration(i)*gap)) {
						passed++
					}
				}
				if passed != tt.limit {
					t.Errorf("window %d: %d of %d passed, want %d", k, passed, n, tt.limit)
				}
			}
		})
	}
}

// TestBoundaryEffect runs the timeline of the package documentation: one
// frame opens the window at t0, then a script fires a burst just before the
// edge and one at it.
func TestBoundaryEffect(t *testing.T) {
	t.Parallel()
	const limit = 20
	tests := []struct {
		alg             Algorithm
		before, atEdge  int // frames passed at t0+900ms and at t0+1s
		wantWithin100ms int
	}{
		{Fixed, 19, 20, 2*limit - 1},
		{Sliding, 19, 0, limit - 1},
		{Token, 20, 2, 22},
	}
	for _, tt := range tests {
		t.Run(string(tt.alg), func(t *testing.T) {
			t.Parallel()
			l, err := New(Config{Algorithm: tt.alg, Limit: limit, Window: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if !l.AllowAt(t0) {
				t.Fatalf("AllowAt(t0) = false, want true")
			}
			before := burst(l, 900*time.Millisecond, limit)
			atEdge := burst(l, time.Second, limit)
			if before != tt.before || atEdge != tt.atEdge {
				t.Errorf("passed %d at t0+900ms and %d at t0+1s, want %d and %d", before, atEdge, tt.before, tt.atEdge)
			}
			if got := before + atEdge; got != tt.wantWithin100ms {
				t.Errorf("%d passed within 100ms, want %d", got, tt.wantWithin100ms)
			}
		})
	}
}
