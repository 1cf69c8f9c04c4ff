package admission

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// DefaultMemoryThreshold is the default Config.MemoryThreshold: above
// 90 % of the memory limit new sessions are refused, which leaves the
// last tenth to the sessions already open (their queues and messages
// grow with the traffic, not with the number of handshakes) and to the
// garbage collector, which Go's soft limit drives harder near it.
const DefaultMemoryThreshold = 0.9

// DefaultRetryAfterMax is the default Config.RetryAfterMax: a refused
// client is never told to wait more than a minute. At the admission
// rate a full instance refills in (20 s by the server's default
// -admit-rate), so a minute holds the backlog of a whole instance's
// clients arriving at once, with room.
const DefaultRetryAfterMax = time.Minute

// DefaultSpreadRate is the rate, in retries per second, at which the
// retries of refused clients are spread when Config.Rate is zero (no
// admission rate): a rate must exist to say how far apart they come
// back. A hundred a second is what one instance accepts without effort.
const DefaultSpreadRate = 100

// Config configures a Gate. The zero value admits every session and
// bounds nothing: each bound is off until set.
type Config struct {
	// MaxSessions is the most sessions this instance holds at once (held
	// from an admitting decision until Release). Zero means no cap;
	// negative is an error.
	MaxSessions int
	// Rate is the instance-wide rate of new sessions per second (a token
	// bucket refilled at Rate). Zero means no rate bound; negative is an
	// error.
	Rate float64
	// Burst is the bucket's size: how many sessions may be admitted at
	// once after a quiet spell. Zero means a tenth of a second of Rate,
	// or three standard deviations of the retries' own noise in 100 ms
	// (3√(Rate/10), see doc.go) when that is more, at least 1: a storm's
	// first hundred milliseconds then admit at most about twice what the
	// rate gives them, and the noise of retries spread by their clients
	// still finds room. Negative is an error. Unused without Rate.
	Burst int
	// MemoryLimit is the memory, in bytes, the process is meant to stay
	// under (the program sets Go's soft limit to it). Zero means no
	// memory guard.
	MemoryLimit uint64
	// MemoryThreshold is the fraction of MemoryLimit above which new
	// sessions are refused; sessions already open are untouched. Zero
	// means DefaultMemoryThreshold; outside (0, 1] is an error.
	MemoryThreshold float64
	// MemoryInterval is the longest a memory figure is reused before it
	// is read again. Zero means DefaultMemoryInterval; negative is an
	// error.
	MemoryInterval time.Duration
	// ReadMemory returns the memory in use, in bytes. Nil means
	// RuntimeMemory. Tests put a fixed figure here.
	ReadMemory func() uint64
	// RetryAfterMax is the longest Retry-After a refusal announces,
	// rounded up to whole seconds. Zero means DefaultRetryAfterMax;
	// negative is an error.
	RetryAfterMax time.Duration
	// Rand returns uniform values in [0, 1) for the Retry-After draws.
	// Nil means math/rand/v2's Float64. It is called with the Gate's
	// lock held.
	Rand func() float64
}

// A Decision is the Gate's answer to one new session.
type Decision struct {
	// Admitted reports whether the session may start. An admitting
	// decision holds a slot until Release.
	Admitted bool
	// Reason is why the session was refused: outcome.AdmissionMemory,
	// AdmissionSessions or AdmissionRate, checked in that order. Empty
	// when admitted.
	Reason string
	// RetryAfter is when the refused client should try again, in whole
	// seconds, at least 1 s and at least the time the bucket needs for
	// its next token, at most Config.RetryAfterMax (which wins over the
	// token when the rate is that slow; see the package comment for how
	// it is drawn). Zero when admitted.
	RetryAfter time.Duration
}

// State is a Gate's figures at one moment, for readiness and metrics.
type State struct {
	// Sessions is the sessions held now; MaxSessions the cap (0: none).
	Sessions, MaxSessions int
	// MemoryUsed is the last memory figure read, MemoryLimit the
	// configured limit (0: no guard, and MemoryUsed is not read).
	MemoryUsed, MemoryLimit uint64
	// Refusing is why a new session would be refused now whatever the
	// rate: outcome.AdmissionMemory or AdmissionSessions; empty when the
	// instance takes sessions. An empty bucket is not reported: it
	// refills within a second and is no reason to steer traffic away.
	Refusing string
	// Backlog is the refused clients told to come back within
	// RetryAfterMax: the pressure the Retry-After window grows with.
	Backlog int
	// PeakAdmitted is the most admitting decisions the Gate has taken
	// within any PeakWindow since it was made (refunded ones included),
	// at most 4,096: with a rate, never more than Rate × PeakWindow +
	// Burst plus the tokens refunded in that window.
	PeakAdmitted int
}

// Gate decides whether this instance takes one more session: under its
// session cap, with a token of its instance-wide rate and under its
// memory threshold. A refused request takes no token and no slot. The
// zero Gate is not usable; call New. A Gate is safe for concurrent use.
type Gate struct {
	cfg   Config
	burst float64
	rnd   func() float64

	mu       sync.Mutex // guards everything below
	sessions int
	tokens   float64
	last     time.Time // when tokens was last refilled; zero: full bucket
	mem      memoryGauge
	sched    schedule
	peak     peakTracker
}

// New returns a Gate for cfg, with defaults filled in on a copy.
func New(cfg Config) (*Gate, error) {
	switch {
	case cfg.MaxSessions < 0:
		return nil, configErrorf("Config.MaxSessions %d is negative", cfg.MaxSessions)
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return nil, configErrorf("Config.Rate %v is not a rate (want 0 or more per second)", cfg.Rate)
	case cfg.Burst < 0:
		return nil, configErrorf("Config.Burst %d is negative", cfg.Burst)
	case cfg.MemoryThreshold < 0 || cfg.MemoryThreshold > 1 || math.IsNaN(cfg.MemoryThreshold):
		return nil, configErrorf("Config.MemoryThreshold %v is not in (0, 1]", cfg.MemoryThreshold)
	case cfg.MemoryInterval < 0:
		return nil, configErrorf("Config.MemoryInterval %v is negative", cfg.MemoryInterval)
	case cfg.RetryAfterMax < 0:
		return nil, configErrorf("Config.RetryAfterMax %v is negative", cfg.RetryAfterMax)
	}
	if cfg.Burst == 0 {
		cfg.Burst = max(int(math.Ceil(cfg.Rate/10)), int(math.Ceil(3*math.Sqrt(cfg.Rate/10))), 1)
	}
	if cfg.MemoryThreshold == 0 {
		cfg.MemoryThreshold = DefaultMemoryThreshold
	}
	if cfg.MemoryInterval == 0 {
		cfg.MemoryInterval = DefaultMemoryInterval
	}
	if cfg.ReadMemory == nil {
		cfg.ReadMemory = RuntimeMemory
	}
	if cfg.RetryAfterMax == 0 {
		cfg.RetryAfterMax = DefaultRetryAfterMax
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	spread := cfg.Rate
	if spread == 0 {
		spread = DefaultSpreadRate
	}
	maxSecs := int64((cfg.RetryAfterMax + time.Second - 1) / time.Second)
	g := &Gate{
		cfg:    cfg,
		burst:  float64(cfg.Burst),
		rnd:    cfg.Rand,
		tokens: float64(cfg.Burst),
		mem:    memoryGauge{read: cfg.ReadMemory, interval: cfg.MemoryInterval},
		sched:  newSchedule(spread, maxSecs),
	}
	return g, nil
}

// Config returns the configuration with its defaults filled in.
func (g *Gate) Config() Config { return g.cfg }

// Admit is AdmitAt(time.Now()), with the time read once the Gate's lock
// is held, so that decisions are taken in the order of their instants
// (see admitWith).
func (g *Gate) Admit() Decision { return g.admitWith(time.Now, true) }

// AdmitAt decides on one new session at now. An admitting decision
// takes a token and a slot; the caller gives the slot back with Release,
// exactly once, when the session ends or when the request does not
// become one. A refusal takes neither and counts the client in the
// retry schedule.
func (g *Gate) AdmitAt(now time.Time) Decision {
	return g.decide(now, nil, true)
}

// CheckAt answers as AdmitAt would at now but takes nothing and counts
// nothing when it admits: for a request that could not become a session
// (a plain GET of the WebSocket path), which should learn that the
// instance is busy without spending what a real handshake needs. A
// refusal is counted in the retry schedule like AdmitAt's.
func (g *Gate) CheckAt(now time.Time) Decision {
	return g.decide(now, nil, false)
}

// admitWith decides at clock(), read with the lock held: a decision
// whose instant was read before the lock could wait for it (a goroutine
// descheduled on a busy machine, for hundreds of milliseconds) while
// later ones go first, and the bucket, whose clock never steps back,
// would then bound its admissions by instants that are not when they
// happened. The Middleware decides this way; AdmitAt and CheckAt, with
// the time passed in, are for step tables.
func (g *Gate) admitWith(clock func() time.Time, take bool) Decision {
	return g.decide(time.Time{}, clock, take)
}

// decide is AdmitAt (take) or CheckAt at now, or at clock() read with
// the lock held when clock is not nil.
func (g *Gate) decide(now time.Time, clock func() time.Time, take bool) Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	if clock != nil {
		now = clock()
	}
	g.refill(now)
	reason := g.refusingLocked(now)
	if reason == "" && g.cfg.Rate > 0 && g.tokens < 1 {
		reason = outcome.AdmissionRate
	}
	if reason != "" {
		return Decision{Reason: reason, RetryAfter: g.retryAfterLocked(now)}
	}
	if take {
		g.sessions++
		if g.cfg.Rate > 0 {
			g.tokens--
		}
		// The bucket's clock never steps back (refill keeps the latest
		// instant): count the admission at that clock, so that a
		// decision whose now was read before another's, and which took
		// the lock after it, falls in the window the bucket bounded.
		at := now
		if g.last.After(at) {
			at = g.last
		}
		g.peak.record(at)
	}
	return Decision{Admitted: true}
}

// Release gives back the slot of an admitting decision. Call it once
// per admitting AdmitAt; a Release with no slot held does nothing.
func (g *Gate) Release() {
	g.mu.Lock()
	if g.sessions > 0 {
		g.sessions--
	}
	g.mu.Unlock()
}

// State is shorthand for StateAt(time.Now()).
func (g *Gate) State() State { return g.StateAt(time.Now()) }

// StateAt returns the figures at now, reading the memory figure if the
// cached one is older than Config.MemoryInterval.
func (g *Gate) StateAt(now time.Time) State {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := State{
		Sessions:     g.sessions,
		MaxSessions:  g.cfg.MaxSessions,
		MemoryLimit:  g.cfg.MemoryLimit,
		Refusing:     g.refusingLocked(now),
		Backlog:      g.sched.pending(now, 1),
		PeakAdmitted: g.peak.peak,
	}
	if g.cfg.MemoryLimit > 0 {
		st.MemoryUsed = g.mem.used
	}
	return st
}

// refill adds the tokens accrued since the last refill, up to the
// burst. A clock stepped back adds nothing.
func (g *Gate) refill(now time.Time) {
	if g.cfg.Rate == 0 {
		return
	}
	if !g.last.IsZero() {
		if dt := now.Sub(g.last); dt > 0 {
			g.tokens = min(g.burst, g.tokens+dt.Seconds()*g.cfg.Rate)
		}
	}
	if g.last.IsZero() || now.After(g.last) {
		g.last = now
	}
}

// refusingLocked returns the reason a session would be refused at now
// other than the rate, or "".
func (g *Gate) refusingLocked(now time.Time) string {
	if g.cfg.MemoryLimit > 0 {
		used := g.mem.usedAt(now)
		if float64(used) > g.cfg.MemoryThreshold*float64(g.cfg.MemoryLimit) {
			return outcome.AdmissionMemory
		}
	}
	if g.cfg.MaxSessions > 0 && g.sessions >= g.cfg.MaxSessions {
		return outcome.AdmissionSessions
	}
	return ""
}

// retryAfterLocked draws a refusal's Retry-After from the schedule, no
// earlier than the bucket's next token.
func (g *Gate) retryAfterLocked(now time.Time) time.Duration {
	lo := int64(1)
	if g.cfg.Rate > 0 && g.tokens < 1 {
		wait := (1 - g.tokens) / g.cfg.Rate
		lo = max(lo, int64(math.Ceil(wait)))
	}
	return time.Duration(g.sched.reserve(now, lo, g.rnd)) * time.Second
}
