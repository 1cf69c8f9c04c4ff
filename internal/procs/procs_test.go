package procs

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
)

func TestNext(t *testing.T) {
	p := Default(4)
	for _, tc := range []struct {
		name          string
		cur           int
		busy          float64
		low           int
		next, lowNext int
	}{
		{"one processor nearly full goes to max", 1, 0.9, 0, 4, 0},
		{"one processor with room stays", 1, 0.8, 0, 1, 0},
		{"one processor idle stays", 1, 0, 9, 1, 0},
		{"busy past the share of two goes to max", 2, 1.8, 0, 4, 0},
		{"fits in one fewer: counts", 2, 0.3, 0, 2, 1},
		{"fits in one fewer for long enough: one fewer", 2, 0.3, 9, 1, 0},
		{"a tick that does not fit resets the count", 2, 0.85, 9, 2, 0},
		{"down one at a time", 4, 0.1, 9, 3, 0},
		{"at max and busy stays", 4, 3.9, 0, 4, 0},
		{"above max is brought to max", 8, 0, 0, 4, 1},
		{"below one is taken as one", 0, 0.5, 0, 1, 0},
	} {
		next, low := p.Next(tc.cur, tc.busy, tc.low)
		if next != tc.next || low != tc.lowNext {
			t.Errorf("%s: Next(%d, %.2f, %d) = %d, %d; want %d, %d", tc.name, tc.cur, tc.busy, tc.low, next, low, tc.next, tc.lowNext)
		}
	}
}

// waitProcs waits until GOMAXPROCS is want or fails.
func waitProcs(t *testing.T, want int, what string) {
	t.Helper()
	poll.Until(t, 20*time.Second, func() error {
		if n := runtime.GOMAXPROCS(0); n != want {
			return fmt.Errorf("GOMAXPROCS %d, want %d %s", n, want, what)
		}
		return nil
	})
}

// TestAdaptFollowsTheLoad runs real load: an idle process is on one
// processor, goroutines that keep the CPU busy bring it back up, and
// stop puts back what it found.
func TestAdaptFollowsTheLoad(t *testing.T) {
	start := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(start)
	var changes []int
	var cmu sync.Mutex
	// Low thresholds: a test machine busy with other packages may give
	// the spinning goroutines well under a whole core.
	stop := Adapt(Policy{Max: 2, Raise: 0.3, Lower: 0.2, LowerAfter: 3}, 20*time.Millisecond, func(n int) {
		cmu.Lock()
		changes = append(changes, n)
		cmu.Unlock()
	})
	defer stop()
	waitProcs(t, 1, "once idle")

	var spin atomic.Bool
	spin.Store(true)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for spin.Load() {
				for range 10000 {
				}
			}
		})
	}
	waitProcs(t, 2, "with two goroutines that never wait")
	spin.Store(false)
	wg.Wait()
	waitProcs(t, 1, "once idle again")

	if other := Adapt(Default(2), time.Millisecond, nil); other == nil {
		t.Fatal("a second Adapt returned a nil stop")
	} else {
		other()
	}
	stop()
	stop()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS after stop: %d, want the 3 found at the start", got)
	}
	cmu.Lock()
	defer cmu.Unlock()
	if len(changes) < 3 || changes[0] != 1 || changes[1] != 2 {
		t.Errorf("changes reported: %v, want 1, 2, ..., 1", changes)
	}
}

func TestAdaptOnOneProcessorDoesNothing(t *testing.T) {
	start := runtime.GOMAXPROCS(0)
	stop := Adapt(Default(1), time.Millisecond, func(int) { t.Error("changed with a Max of 1") })
	time.Sleep(20 * time.Millisecond)
	stop()
	if got := runtime.GOMAXPROCS(0); got != start {
		t.Errorf("GOMAXPROCS %d, want %d untouched", got, start)
	}
}
