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
//
// A burst that comes after a quiet spell finds the process on one
// processor. Waiting for the next tick to notice would hold it there for
// up to a tick, so while below Max Adapt also looks every Policy.Check (a
// few milliseconds) at how long runnable goroutines waited for a
// processor (runtime/metrics /sched/latencies:seconds): one that waited
// Policy.Wait or more means work is queueing, or that the process's
// thread was not running while work stood queued on it (a shared
// machine ran something else), and all processors come back at once. Bursts that recur keep them: such a wait (at Max, read
// once a tick), or a tick that needed more than one processor fewer,
// starts a hold of Policy.Hold ticks before the process may come down
// again.
package procs

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/outcome"
)

// Policy decides the processors to run on from the load of the last tick.
// Its zero value is not usable: Default fills it.
type Policy struct {
	// Max is the most processors: the GOMAXPROCS the process started
	// with, which honours the GOMAXPROCS variable and the container's CPU
	// limit.
	Max int
	// Raise: a tick that used more than Raise × the current processors
	// (cores) goes to Max at once.
	Raise float64
	// Lower: after LowerAfter ticks in a row that used less than Lower ×
	// one processor fewer, the process gives one up.
	Lower      float64
	LowerAfter int
	// Hold is how many ticks, after a raise or after a tick that did not
	// fit in one processor fewer, pass before ticks start counting
	// towards LowerAfter: bursts that recur within Hold ticks find every
	// processor. Zero: no hold.
	Hold int
	// Check is how often Adapt looks for queueing between ticks while
	// below Max; Wait is the time a runnable goroutine must have waited
	// for a processor since the last look to go to Max at once, whatever
	// the load (see Queued). Check zero: no look between ticks.
	Check time.Duration
	Wait  time.Duration
}

// Default is the policy for up to most processors: up past 85 % of what
// runs over a tick, or as soon as a goroutine waited a millisecond to run
// (looked at every 5 ms while below most); down when a second's load (10 ticks of
// DefaultTick) would fill less than 80 % of one processor fewer and
// nothing needed more for DefaultHold before it.
func Default(most int) Policy {
	return Policy{Max: most, Raise: 0.85, Lower: 0.8, LowerAfter: 10,
		Hold: int(DefaultHold / DefaultTick), Check: DefaultCheck, Wait: DefaultWait}
}

// DefaultTick is how often Adapt reads the load.
const DefaultTick = 100 * time.Millisecond

// DefaultHold is how long the process stays on every processor after the
// last tick that needed them: 5 s keeps bursts that come every few
// seconds (a game's rounds, a chat's busy moments) on every processor,
// and costs a server whose load has ended 5 s more on them.
const DefaultHold = 5 * time.Second

// DefaultCheck is how often Adapt looks for queueing below Max: a burst
// after a quiet spell waits about this long for the other processors.
// The look itself is a 0.3 µs read of the scheduler's latency histogram;
// what it costs is waking an idle process 200 times a second.
const DefaultCheck = 5 * time.Millisecond

// DefaultWait is the wait for a processor that makes Adapt go to Max
// between ticks: a frame's work takes microseconds, so a goroutine that
// waited a millisecond stood behind a queue, not behind one frame.
const DefaultWait = time.Millisecond

// The reasons Adapt passes to changed.
const (
	// ReasonLoad: a tick's CPU time filled the processors in use.
	ReasonLoad = outcome.ProcsLoad
	// ReasonQueue: between ticks, goroutines waited Policy.Wait for a
	// processor.
	ReasonQueue = outcome.ProcsQueue
	// ReasonLower: processors given up, at the start (down to one) or
	// after a quiet spell (one fewer).
	ReasonLower = outcome.ProcsLower
)

// Next returns the processors to run on after a tick that used busy cores
// on cur processors, low being the ticks in a row before it that were low
// enough to lower (negative: the hold still to run); it also returns that
// count including this tick.
func (p Policy) Next(cur int, busy float64, low int) (next, lowNow int) {
	cur = min(max(cur, 1), p.Max)
	if busy > p.Raise*float64(cur) {
		return p.Max, -p.Hold
	}
	if cur == 1 {
		return cur, 0
	}
	if busy >= p.Lower*float64(cur-1) {
		return cur, -p.Hold
	}
	if low+1 >= p.LowerAfter {
		return cur - 1, 0
	}
	return cur, low + 1
}

// Queued returns the processors to run on after a look between ticks
// that found waited goroutines (sampled by the runtime) that had waited
// Wait or more for a processor on cur processors since the previous
// look, and the low count from then on. Below Max, any such wait goes to
// Max, whatever the process's load: on full processors work is
// queueing, and on processors with room the process's threads were not
// running (the machine ran something else, or a collection stopped
// them), while goroutines stood queued behind them. A goroutine queued
// on a processor whose thread is not running waits until the thread runs
// again, a scheduler's time slice or more; with another processor, an
// idle thread takes it (Go's work stealing). Such waits were most of the
// slowest 1 % of deliveries on a shared 2-core machine (BENCHMARKS.md).
// A process that fits in one processor with room on a machine of its
// own sees no such waits and stays on one.
func (p Policy) Queued(cur int, waited uint64, low int) (next, lowNow int) {
	cur = min(max(cur, 1), p.Max)
	if waited > 0 && cur < p.Max {
		return p.Max, -p.Hold
	}
	return cur, low
}

var (
	mu      sync.Mutex
	running bool
)

// Adapt sets GOMAXPROCS every tick as policy says, and between ticks
// every policy.Check while below Max, starting from one processor (a
// server starts idle, and a load that needs more gets them at once),
// until stop is called, which puts back the GOMAXPROCS found at the
// start. changed, if not nil, is called with each new value and its
// reason (ReasonLoad, ReasonQueue, ReasonLower). A Max of 1 or less does
// nothing. It is process-wide: while one runs, another Adapt does nothing
// and its stop is a no-op.
func Adapt(policy Policy, tick time.Duration, changed func(procs int, reason string)) (stop func()) {
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
		// The look between ticks runs only below Max, where a burst
		// would wait: each look wakes the process, which costs more than
		// the look itself.
		checking := policy.Check > 0
		c := time.NewTicker(time.Hour)
		c.Stop()
		defer c.Stop()
		waits := newWaitCounter(policy.Wait)
		cur, low := 1, 0
		runtime.GOMAXPROCS(cur)
		if cur != start && changed != nil {
			changed(cur, ReasonLower)
		}
		if checking {
			c.Reset(policy.Check)
		}
		last, lastAt := procstat.SelfCPU(), time.Now()
		set := func(next int, raise string) {
			if next == cur {
				return
			}
			reason := raise
			if next < cur {
				reason = ReasonLower
			}
			runtime.GOMAXPROCS(next)
			switch {
			case !checking:
			case next == policy.Max:
				c.Stop()
			case cur == policy.Max:
				// Waits from the time at Max are not this look's.
				waits.since()
				c.Reset(policy.Check)
			}
			cur = next
			if changed != nil {
				changed(next, reason)
			}
		}
		for {
			select {
			case <-done:
				return
			case <-c.C:
				var next int
				next, low = policy.Queued(cur, waits.since(), low)
				set(next, ReasonQueue)
			case now := <-t.C:
				cpu := procstat.SelfCPU()
				busy := float64(cpu-last) / float64(now.Sub(lastAt))
				last, lastAt = cpu, now
				var next int
				next, low = policy.Next(cur, busy, low)
				if cur == policy.Max && checking && waits.since() > 0 {
					// Goroutines still wait to run on every processor:
					// the hold starts again (see Queued).
					next, low = cur, min(low, -policy.Hold)
				}
				set(next, ReasonLoad)
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

// waitCounter counts the goroutines that waited at least a given time for
// a processor, from the runtime's histogram of scheduling latencies (which
// samples one goroutine transition in several).
type waitCounter struct {
	wait   float64 // seconds
	sample []metrics.Sample
	prev   uint64
}

func newWaitCounter(wait time.Duration) *waitCounter {
	w := &waitCounter{wait: wait.Seconds(), sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
	w.since()
	return w
}

// since returns the waits of at least w.wait recorded since the last
// call.
func (w *waitCounter) since() uint64 {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := w.sample[0].Value.Float64Histogram()
	var n uint64
	// Buckets[i] is the lower bound of Counts[i].
	for i, c := range h.Counts {
		if h.Buckets[i] >= w.wait {
			n += c
		}
	}
	d := n - w.prev
	w.prev = n
	return d
}
