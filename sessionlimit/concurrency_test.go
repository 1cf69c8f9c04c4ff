package sessionlimit

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Each stress test below runs workers that take their instants from one
// shared clock advanced by every call, so time moves on as the workers run
// and they cross many window edges together, reading the clock and then
// racing for the lock, which hands the limiter instants out of order.
const (
	windowless    = -1
	stressWorkers = 8
	stressCalls   = 20000 // per worker
	stressTick    = int64(time.Microsecond)
	stressWindow  = time.Millisecond // 1000 ticks, far more than the limit
	stressLimit   = 50
)

// stress runs allow from stressWorkers goroutines and returns, per window
// start that allow reported, the number of frames passed, and the range of
// instants handed out. allow reports windowless as its start for limiters
// that have no windows.
func stress(t *testing.T, allow func(now int64) (bool, int64)) (perWindow map[int64]int, first, last int64) {
	t.Helper()
	base := nanos(t0)
	var clock atomic.Int64
	var late atomic.Int64  // passed frames whose instant lies past their window's end
	var early atomic.Int64 // passed frames whose instant lies before their window's start
	results := make([]map[int64]int, stressWorkers)
	var wg sync.WaitGroup
	for w := range stressWorkers {
		wg.Go(func() {
			m := make(map[int64]int)
			for range stressCalls {
				now := base + clock.Add(stressTick)
				if ok, start := allow(now); ok {
					m[start]++
					if start != windowless && now >= start+int64(stressWindow) {
						late.Add(1)
					}
					if start != windowless && now < start {
						early.Add(1)
					}
				}
			}
			results[w] = m
		})
	}
	wg.Wait()
	if n := late.Load(); n != 0 {
		t.Errorf("%d frames counted in a window that had ended at their instant", n)
	}
	if n := early.Load(); n > 0 {
		t.Logf("%d passed frames arrived out of order, before their window's start", n)
	}
	perWindow = make(map[int64]int)
	for _, m := range results {
		for start, n := range m {
			perWindow[start] += n
		}
	}
	return perWindow, base + stressTick, base + clock.Load()
}

// checkWindows asserts that every window passed exactly stressLimit frames
// (all but the last, which may have been cut short), that windows did not
// overlap, and that many edges were crossed.
func checkWindows(t *testing.T, perWindow map[int64]int, backToBack bool) {
	t.Helper()
	starts := make([]int64, 0, len(perWindow))
	for s := range perWindow {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	const wantWindows = stressWorkers * stressCalls * stressTick / int64(stressWindow)
	if int64(len(starts)) < wantWindows-1 {
		t.Fatalf("%d windows opened, want at least %d", len(starts), wantWindows-1)
	}
	for i, s := range starts {
		n := perWindow[s]
		if n > stressLimit {
			t.Errorf("window %d passed %d frames, want at most %d", i, n, stressLimit)
		}
		if n < stressLimit && i < len(starts)-1 {
			t.Errorf("window %d passed %d frames, want %d: every window is offered far more", i, n, stressLimit)
		}
		if i == 0 {
			continue
		}
		gap := time.Duration(s - starts[i-1])
		if gap < stressWindow || (backToBack && gap != stressWindow) {
			t.Errorf("window %d opened %v after the previous one, want %v", i, gap, stressWindow)
		}
	}
}

func TestFixedWindowConcurrentEdges(t *testing.T) {
	t.Parallel()
	l := NewFixedWindow(stressLimit, stressWindow)
	perWindow, _, _ := stress(t, l.allow)
	checkWindows(t, perWindow, false)
}

func TestSlidingWindowConcurrentEdges(t *testing.T) {
	t.Parallel()
	l := NewSlidingWindow(stressLimit, stressWindow)
	perWindow, _, _ := stress(t, l.allow)
	// Windows are back to back while traffic flows; the estimate makes
	// windows pass fewer than the limit, so only the upper bound applies.
	starts := make([]int64, 0, len(perWindow))
	for s := range perWindow {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	for i, s := range starts {
		if n := perWindow[s]; n > stressLimit {
			t.Errorf("window %d passed %d frames, want at most %d", i, n, stressLimit)
		}
		if i > 0 && s-starts[i-1] != int64(stressWindow) {
			t.Errorf("window %d opened %v after the previous one, want %v", i, time.Duration(s-starts[i-1]), stressWindow)
		}
	}
	if len(starts) < 30 {
		t.Errorf("%d windows opened, want at least 30", len(starts))
	}
}

func TestTokenBucketConcurrent(t *testing.T) {
	t.Parallel()
	l := NewTokenBucket(stressLimit, stressWindow)
	perWindow, first, last := stress(t, func(now int64) (bool, int64) {
		// One pseudo-window: the bucket has none.
		return l.allow(now), windowless
	})
	passed := int64(perWindow[windowless])
	interval := int64(stressWindow) / stressLimit
	// Fewer than capacity + elapsed/interval, plus one for the frame at
	// the very first instant.
	maxPassed := stressLimit + (last-first)/interval + 1
	if passed > maxPassed {
		t.Errorf("%d frames passed over %v, want at most %d", passed, time.Duration(last-first), maxPassed)
	}
	// Demand far above the rate: the bucket should not refuse much it could
	// pass. Allow slack for the out-of-order instants.
	if minPassed := maxPassed * 9 / 10; passed < minPassed {
		t.Errorf("%d frames passed over %v, want at least %d", passed, time.Duration(last-first), minPassed)
	}
}
