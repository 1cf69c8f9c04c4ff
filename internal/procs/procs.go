// Package procs runs the Go scheduler on as few processors (GOMAXPROCS)
// as the process's load needs, up to the number it started with.
//
// A server that relays small messages and is busy for half of one core
// pays for running on two or more processors anyway: every time the
// network poller readies a session's reader, the scheduler wakes another
// thread to look for work, which mostly finds none and sleeps again. On a
// 2-core machine, relaying 100-byte messages one per WebSocket message at
// about 90,000 a second, GOMAXPROCS=1 cut the server's CPU per message by
// 10-17 %, at the same rate and latency. Capped at one processor, though,
// the server could not use the second core under a heavier load. Adapting
// gives both: run on one processor while the load fits in it with room to
// spare, and go back up as soon as it does not.
//
// The load is the process's CPU time (user and system) per tick, in cores.
// Policy says when to go up and down.
package procs

import (
	"runtime"
	"sync"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
)

// Policy decides the processors to run on from the load of the last tick.
// Its zero value is not usable: Default fills it.
type Policy struct {
	// Max is the most processors: the GOMAXPROCS the process started
	// with, which honours the GOMAXPROCS variable and the container's CPU
	// limit.
	Max int
	// Raise: a tick that used more than Raise × the current processors
	// (cores) goes to Max at once, so a burst waits about one tick.
	Raise float64
	// Lower: after LowerAfter ticks in a row that used less than Lower ×
	// one processor fewer, the process gives one up.
	Lower      float64
	LowerAfter int
}

// Default is the policy for up to most processors: up past 85 % of what
// runs, down when a second's load (10 ticks of DefaultTick) would fill
// less than 80 % of one processor fewer.
func Default(most int) Policy {
	return Policy{Max: most, Raise: 0.85, Lower: 0.8, LowerAfter: 10}
}

// DefaultTick is how often Adapt reads the load: a burst that needs more
// processors waits about this long for them (longer when one processor is
// so busy that Adapt's own goroutine waits its turn).
const DefaultTick = 100 * time.Millisecond

// Next returns the processors to run on after a tick that used busy cores
// on cur processors, low being the ticks in a row before it that were low
// enough to lower; it also returns that count including this tick.
func (p Policy) Next(cur int, busy float64, low int) (next, lowNow int) {
	cur = min(max(cur, 1), p.Max)
	if busy > p.Raise*float64(cur) {
		return p.Max, 0
	}
	if cur == 1 || busy >= p.Lower*float64(cur-1) {
		return cur, 0
	}
	if low+1 >= p.LowerAfter {
		return cur - 1, 0
	}
	return cur, low + 1
}

var (
	mu      sync.Mutex
	running bool
)

// Adapt sets GOMAXPROCS every tick as policy says, starting from one
// processor (a server starts idle, and a load that needs more gets them
// after a tick), until stop is called, which puts back the GOMAXPROCS
// found at the start. changed, if not nil, is called with each new value. A Max
// of 1 or less does nothing. It is process-wide: while one runs, another
// Adapt does nothing and its stop is a no-op.
func Adapt(policy Policy, tick time.Duration, changed func(procs int)) (stop func()) {
	if policy.Max <= 1 {
		return func() {}
	}
	mu.Lock()
	defer mu.Unlock()
	if running {
		return func() {}
	}
	running = true
	start := runtime.GOMAXPROCS(0)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(tick)
		defer t.Stop()
		cur, low := 1, 0
		runtime.GOMAXPROCS(cur)
		if cur != start && changed != nil {
			changed(cur)
		}
		last, lastAt := procstat.SelfCPU(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				cpu := procstat.SelfCPU()
				busy := float64(cpu-last) / float64(now.Sub(lastAt))
				last, lastAt = cpu, now
				var next int
				next, low = policy.Next(cur, busy, low)
				if next != cur {
					runtime.GOMAXPROCS(next)
					cur = next
					if changed != nil {
						changed(next)
					}
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
			runtime.GOMAXPROCS(start)
			mu.Lock()
			running = false
			mu.Unlock()
		})
	}
}
