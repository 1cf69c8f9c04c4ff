package sessionlimit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// passedFrame is one frame a limiter let through in a random timeline.
type passedFrame struct {
	at    int64 // instant on the nanos clock
	start int64 // start of the window it was counted in
}

// randomTimeline offers bursts of random size at random gaps, in time order,
// and returns the frames allow passed. Gaps range from none to well over two
// windows, so it crosses edges, back-to-back windows and idle periods.
func randomTimeline(seed uint64, limit int, window time.Duration, allow func(now int64) (bool, int64)) []passedFrame {
	r := rand.New(rand.NewPCG(seed, 0))
	var passed []passedFrame
	now := nanos(t0)
	for range 300 {
		switch r.IntN(4) {
		case 0: // same instant
		case 1:
			now += r.Int64N(int64(window) / 10)
		case 2:
			now += r.Int64N(int64(window))
		case 3:
			now += r.Int64N(3 * int64(window))
		}
		for range 1 + r.IntN(2*limit) {
			if ok, start := allow(now); ok {
				passed = append(passed, passedFrame{now, start})
			}
		}
	}
	return passed
}

// worstInterval returns the largest number of passed frames in any interval
// [a, a+window), and the frames in it. The largest is found among intervals
// starting at a passed frame.
func worstInterval(passed []passedFrame, window time.Duration) (worst int, at int) {
	for i := range passed {
		j := i
		for j < len(passed) && passed[j].at < passed[i].at+int64(window) {
			j++
		}
		if j-i > worst {
			worst, at = j-i, i
		}
	}
	return worst, at
}

func TestBoundsRandomTimelines(t *testing.T) {
	t.Parallel()
	const window = time.Second
	for _, limit := range []int{1, 2, 5, 20} {
		t.Run(fmt.Sprint("fixed/", limit), func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(50) {
				passed := randomTimeline(seed, limit, window, NewFixedWindow(limit, window).allow)
				checkPerWindow(t, seed, passed, limit)
				if worst, _ := worstInterval(passed, window); worst > 2*limit-1 {
					t.Errorf("seed %d: %d passed in one window length, want at most %d", seed, worst, 2*limit-1)
				}
			}
		})
		t.Run(fmt.Sprint("sliding/", limit), func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(50) {
				passed := randomTimeline(seed, limit, window, NewSlidingWindow(limit, window).allow)
				checkPerWindow(t, seed, passed, limit)
				checkSlidingBound(t, seed, passed, limit, window)
			}
		})
		t.Run(fmt.Sprint("token/", limit), func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(50) {
				l := NewTokenBucket(limit, window)
				passed := randomTimeline(seed, limit, window, func(now int64) (bool, int64) { return l.allow(now), windowless })
				// Fewer than limit + d/interval in any interval of length d.
				if worst, _ := worstInterval(passed, window); worst > 2*limit-1 {
					t.Errorf("seed %d: %d passed in one window length, want at most %d", seed, worst, 2*limit-1)
				}
				for i, f := range passed {
					if i >= limit && f.at < passed[i-limit].at+int64(l.interval) {
						t.Errorf("seed %d: %d frames passed within %v, want at most %d", seed, limit+1, time.Duration(l.interval), limit)
					}
				}
			}
		})
	}
}

// checkPerWindow asserts that no window passed more than limit frames.
func checkPerWindow(t *testing.T, seed uint64, passed []passedFrame, limit int) {
	t.Helper()
	perWindow := make(map[int64]int)
	for _, f := range passed {
		perWindow[f.start]++
	}
	for start, n := range perWindow {
		if n > limit {
			t.Errorf("seed %d: window at %d passed %d, want at most %d", seed, start, n, limit)
		}
	}
}

// checkSlidingBound asserts the bound the package documentation proves: any
// interval [a, a+window) holds at most limit + x − P×(1−g) frames, where x of
// them belong to the previous window, which passed P in all, and g is the
// part of the interval inside the next window; and never 2×limit or more.
func checkSlidingBound(t *testing.T, seed uint64, passed []passedFrame, limit int, window time.Duration) {
	t.Helper()
	perWindow := make(map[int64]int)
	for _, f := range passed {
		perWindow[f.start]++
	}
	for i, first := range passed {
		a := first.at
		var x, y int
		var nextStart int64
		for _, f := range passed[i:] {
			if f.at >= a+int64(window) {
				break
			}
			if f.start == first.start {
				x++
			} else {
				y++
				nextStart = f.start
			}
		}
		if x+y >= 2*limit {
			t.Errorf("seed %d: %d passed in [%d, +%v), want fewer than %d", seed, x+y, a, window, 2*limit)
		}
		if y == 0 {
			if x > limit {
				t.Errorf("seed %d: %d passed in one window, want at most %d", seed, x, limit)
			}
			continue
		}
		if nextStart != first.start+int64(window) {
			t.Fatalf("seed %d: window at %d follows %d, want back to back in one interval", seed, nextStart, first.start)
		}
		p := float64(perWindow[first.start])
		g := float64(a+int64(window)-nextStart) / float64(window)
		if bound := float64(limit) + float64(x) - p*(1-g); float64(x+y) > bound+1e-9 {
			t.Errorf("seed %d: %d passed in [%d, +%v) (x=%d, P=%v, g=%.3f), want at most %.3f", seed, x+y, a, window, x, p, g, bound)
		}
	}
}

// TestBoundsAreReached checks that the worst cases the documentation names
// happen, so the bounds checked above are tight rather than loose.
func TestBoundsAreReached(t *testing.T) {
	t.Parallel()
	const limit, window = 10, time.Second
	const ms = time.Millisecond
	type offer struct {
		at time.Duration
		n  int
	}
	tests := []struct {
		name   string
		l      Limiter
		offers []offer // in time order
		want   int     // passed within one window length ending at the last offer
	}{
		{
			// One frame opens the window, then bursts before and at the edge.
			name: "fixed", l: NewFixedWindow(limit, window),
			offers: []offer{{0, 1}, {999 * ms, 2 * limit}, {1000 * ms, 2 * limit}},
			want:   2*limit - 1,
		},
		{
			// A window whose frames were all refused leaves nothing to weigh;
			// the next one passes the limit at its very end, and the one after
			// that passes limit − 1 at its end.
			name: "sliding", l: NewSlidingWindow(limit, window),
			offers: []offer{{0, 2 * limit}, {1000 * ms, 2 * limit}, {2999 * ms, 2 * limit}, {3998 * ms, 2 * limit}},
			want:   2*limit - 1,
		},
		{
			// A full bucket, then one token per 100ms.
			name: "token", l: NewTokenBucket(limit, window),
			offers: []offer{{0, 2 * limit}, {100 * ms, 2}, {200 * ms, 2}, {300 * ms, 2}, {400 * ms, 2},
				{500 * ms, 2}, {600 * ms, 2}, {700 * ms, 2}, {800 * ms, 2}, {900 * ms, 2}},
			want: 2*limit - 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var passed []time.Duration
			for _, o := range tt.offers {
				for range o.n {
					if tt.l.AllowAt(t0.Add(o.at)) {
						passed = append(passed, o.at)
					}
				}
			}
			last := tt.offers[len(tt.offers)-1].at
			within := len(passed) - slices.IndexFunc(passed, func(at time.Duration) bool { return at > last-window })
			if within != tt.want {
				t.Errorf("%d passed in (t0+%v, t0+%v], want %d", within, last-window, last, tt.want)
			}
		})
	}
}
