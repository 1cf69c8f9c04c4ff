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
	p.Hold = 30
	for _, tc := range []struct {
		name          string
		cur           int
		busy          float64
		low           int
		next, lowNext int
	}{
		{"one processor nearly full goes to max, held", 1, 0.9, 0, 4, -30},
		{"one processor with room stays", 1, 0.8, 0, 1, 0},
		{"one processor idle stays", 1, 0, 9, 1, 0},
		{"busy past the share of two goes to max", 2, 1.8, 0, 4, -30},
		{"fits in one fewer: counts", 2, 0.3, 0, 2, 1},
		{"fits in one fewer for long enough: one fewer", 2, 0.3, 9, 1, 0},
		{"a tick that does not fit starts the hold again", 2, 0.85, 9, 2, -30},
		{"a low tick in the hold runs it down", 4, 0.1, -30, 4, -29},
		{"the hold's last tick", 4, 0.1, -1, 4, 0},
		{"down one at a time", 4, 0.1, 9, 3, 0},
		{"at max and busy stays, held", 4, 3.9, 0, 4, -30},
		{"above max is brought to max", 8, 0, 0, 4, 1},
		{"below one is taken as one", 0, 0.5, 0, 1, 0},
	} {
		next, low := p.Next(tc.cur, tc.busy, tc.low)
		if next != tc.next || low != tc.lowNext {
			t.Errorf("%s: Next(%d, %.2f, %d) = %d, %d; want %d, %d", tc.name, tc.cur, tc.busy, tc.low, next, low, tc.next, tc.lowNext)
		}
	}
}

func TestQueued(t *testing.T) {
	p := Default(4)
	p.Hold = 30
	for _, tc := range []struct {
		name          string
		cur           int
		waited        uint64
		low           int
		next, lowNext int
	}{
		{"a wait on one processor goes to max, held", 1, 1, 5, 4, -30},
		{"a wait below max goes to max", 3, 7, 0, 4, -30},
		{"no wait changes nothing", 1, 0, 5, 1, 5},
		{"a wait at max changes nothing", 4, 3, 5, 4, 5},
	} {
		next, low := p.Queued(tc.cur, tc.waited, tc.low)
		if next != tc.next || low != tc.lowNext {
			t.Errorf("%s: Queued(%d, %d, %d) = %d, %d; want %d, %d", tc.name, tc.cur, tc.waited, tc.low, next, low, tc.next, tc.lowNext)
		}
	}
}

// step is one event the policy sees: a tick with its load, or (look) a
// look between ticks that found goroutines waiting while the process
// used busy cores.
type step struct {
	busy   float64
	waited uint64
	look   bool
}

// replay runs steps from one processor and returns the processors after
// each.
func replay(p Policy, steps []step) []int {
	cur, low := 1, 0
	out := make([]int, len(steps))
	for i, s := range steps {
		if s.look {
			cur, low = p.Queued(cur, s.waited, low)
		} else {
			cur, low = p.Next(cur, s.busy, low)
		}
		out[i] = cur
	}
	return out
}

// Bursts every 2 s (20 ticks): a tick of 1.5 cores, the rest idle. The
// first burst is found by a look between ticks, before its tick ends;
// then the hold keeps every processor for the bursts that follow, and
// once they stop the process comes down after the hold and a second.
func TestNextBurstsEveryTwoSeconds(t *testing.T) {
	p := Default(2)
	var steps []step
	for range 5 {
		steps = append(steps, step{look: true, busy: 1, waited: 12}, step{busy: 1.5})
		for range 19 {
			steps = append(steps, step{busy: 0.02})
		}
	}
	quiet := len(steps)
	for range p.Hold + p.LowerAfter + 5 {
		steps = append(steps, step{busy: 0.02})
	}
	got := replay(p, steps)
	for i, n := range got[:quiet] {
		if n != 2 {
			t.Fatalf("step %d of the bursts: %d processors, want 2 (steps %v)", i, n, got[:quiet])
		}
	}
	downAt := -1
	for i, n := range got[quiet:] {
		if n == 1 {
			downAt = i
			break
		}
	}
	// The last burst tick was 19 ticks before the quiet: the hold of 50
	// and 10 low ticks run from it.
	if want := p.Hold + p.LowerAfter - 19 - 1; downAt != want {
		t.Errorf("after the bursts: down to 1 at quiet tick %d, want %d", downAt, want)
	}
}

// A steady load that fits in one processor stays on one: the one-frame
// shape at half a core never waits a millisecond to run.
func TestNextSteadyLoadStaysOnOne(t *testing.T) {
	p := Default(2)
	var steps []step
	for i := range 100 {
		steps = append(steps, step{look: true, busy: 0.6}, step{busy: 0.5 + 0.3*float64(i%2)})
	}
	for i, n := range replay(p, steps) {
		if n != 1 {
			t.Fatalf("step %d: %d processors, want 1", i, n)
		}
	}
}

// The same load on a machine that now and then does not run the
// process's thread: goroutines wait a millisecond though the processor
// has room. The first such wait brings every processor back, and the
// waits that follow keep them for the hold; once the machine stops
// interfering the process comes down after the hold and a second.
func TestQueuedMachineWaitsRaise(t *testing.T) {
	p := Default(2)
	var steps []step
	for i := range 100 {
		steps = append(steps, step{look: true, busy: 0.6, waited: uint64(1 + i%3)}, step{busy: 0.5 + 0.3*float64(i%2)})
	}
	// At Max the looks stop (Adapt reads waits once a tick there), so
	// the quiet spell is ticks alone.
	quiet := len(steps)
	for range p.Hold + p.LowerAfter + 5 {
		steps = append(steps, step{busy: 0.5})
	}
	got := replay(p, steps)
	if got[0] != 2 {
		t.Fatalf("after the first wait: %d processors, want 2", got[0])
	}
	for i := 1; i < quiet; i++ {
		if got[i] != 2 {
			t.Fatalf("step %d, while the waits recur: %d processors, want 2", i, got[i])
		}
	}
	if n := got[len(got)-1]; n != 1 {
		t.Errorf("after the quiet spell: %d processors, want 1", n)
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
	stop := Adapt(Policy{Max: 2, Raise: 0.3, Lower: 0.2, LowerAfter: 3}, 20*time.Millisecond, func(n int, _ string) {
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
	stop := Adapt(Default(1), time.Millisecond, func(int, string) { t.Error("changed with a Max of 1") })
	time.Sleep(20 * time.Millisecond)
	stop()
	if got := runtime.GOMAXPROCS(0); got != start {
		t.Errorf("GOMAXPROCS %d, want %d untouched", got, start)
	}
}

// TestAdaptRaisesOnQueueing: with a tick that never comes, only the look
// between ticks can bring the processors back, and goroutines queueing on
// one processor do.
func TestAdaptRaisesOnQueueing(t *testing.T) {
	start := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(start)
	// A low Raise: a test machine busy with other packages may give the
	// spinning goroutines well under a whole core.
	p := Policy{Max: 2, Raise: 0.3, Lower: 0.2, LowerAfter: 10, Hold: 10, Check: 2 * time.Millisecond, Wait: time.Millisecond}
	var reasons []string
	var rmu sync.Mutex
	stop := Adapt(p, time.Hour, func(_ int, reason string) {
		rmu.Lock()
		reasons = append(reasons, reason)
		rmu.Unlock()
	})
	defer stop()
	waitProcs(t, 1, "at the start")

	var spin atomic.Bool
	spin.Store(true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for spin.Load() {
				for range 10000 {
				}
				runtime.Gosched()
			}
		})
	}
	waitProcs(t, 2, "with eight goroutines queueing on one processor and no tick")
	spin.Store(false)
	wg.Wait()
	rmu.Lock()
	defer rmu.Unlock()
	if len(reasons) != 2 || reasons[0] != ReasonLower || reasons[1] != ReasonQueue {
		t.Errorf("reasons %q, want lower (the start), queue", reasons)
	}
}

// Bursts every 2 s too short to fill a tick (0.35 cores over it), each
// found by a look: the process goes to Max for each and stays for the
// hold and a second after it, so that one burst in three waits for a
// look. A burst is a look and 20 ticks: 21 steps.
func TestQueuedShortBursts(t *testing.T) {
	p := Default(2)
	var steps []step
	raisedAt := []int{}
	for range 10 {
		steps = append(steps, step{look: true, busy: 1, waited: 3}, step{busy: 0.35})
		for range 19 {
			steps = append(steps, step{busy: 0.01})
		}
	}
	got := replay(p, steps)
	for i := 1; i < len(got); i++ {
		if got[i] == 2 && got[i-1] == 1 {
			raisedAt = append(raisedAt, i)
		}
	}
	// Raised by the first look, then by the look of every third burst:
	// the hold of 50 ticks and 10 low ticks (60 ticks, 63 steps) run
	// from each raise.
	want := []int{0, 63, 126, 189}
	if got[0] != 2 || len(raisedAt) != len(want)-1 {
		t.Fatalf("raised at steps %v (first %d), want %v", raisedAt, got[0], want)
	}
	for i, at := range raisedAt {
		if at != want[i+1] {
			t.Errorf("raise %d at step %d, want %d", i+1, at, want[i+1])
		}
	}
}
