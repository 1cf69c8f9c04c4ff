package principallimit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/outcome"
)

// Defaults of Config.
const (
	// DefaultLimit is the default Config.Limit: frames one principal may
	// publish per DefaultWindow on every instance together. A real user
	// peaks at 1.3 frames/s; three tabs each at the per-session limit
	// (20/s) make 60, three times a session's own allowance, so a user
	// with a game tab, a chat tab and a phone never meets it. Without it,
	// the default of 10 sessions per principal lets one token publish
	// 200/s spread over as many instances.
	DefaultLimit = 60
	// DefaultWindow is the default Config.Window: the per-session limit's
	// window, so the two read in the same unit.
	DefaultWindow = time.Second
	// DefaultOptimisticShare divides a limit into the frames one instance
	// passes for a principal in a window before Redis has counted them
	// (Config.Optimistic zero): a tenth of the limit, 6 of 60. A user
	// below it on an instance costs no Redis round trip at all, and K
	// instances overshoot the limit by at most K tenths of it.
	DefaultOptimisticShare = 10
	// DefaultMaxPrincipals is the default Config.MaxPrincipals: entries
	// of about 100 bytes, so at most about 10 MB, for more principals
	// publishing within one window than an instance holds sessions.
	DefaultMaxPrincipals = 100_000
	// DefaultRetryInterval is the default Config.RetryInterval.
	DefaultRetryInterval = time.Second
)

// Sources of a Decision: who decided. Each is a bounded metric label.
const (
	// SourceLocal: the pre-check decided in memory, with no round trip:
	// an optimistic frame passed, or a frame dropped because Redis said
	// the principal is over for this window.
	SourceLocal = outcome.PrincipalLimitLocal
	// SourceRedis: Redis answered a charge.
	SourceRedis = outcome.PrincipalLimitRedis
	// SourceMemory: this instance's own count decided: no Redis is
	// configured, Redis is unreachable (fallback mode), or a charge
	// failed in this window.
	SourceMemory = outcome.PrincipalLimitMemory
)

// Decision is the answer for one frame (or one transaction's frames).
type Decision struct {
	// Allowed is true when the frames may pass.
	Allowed bool
	// Source is SourceLocal, SourceRedis or SourceMemory.
	Source string
}

// Limit is the limit one decision is made under.
type Limit struct {
	// Rule names the limit: a principal's frames are counted apart under
	// each rule. Empty is the global limit.
	Rule string
	// Limit is the most frames per Window; zero or less means none
	// (every frame passes, nothing is counted).
	Limit int
	// Window is the fixed window's length; zero or less means the
	// Config's Window.
	Window time.Duration
}

// Observer is told about decisions and the fallback state, for metrics.
// Its methods are called synchronously, some with a principal's entry
// locked, and must be fast and safe for concurrent use.
type Observer interface {
	// Decision reports one decision.
	Decision(d Decision)
	// RoundTrip reports a charge sent to Redis, answered or not.
	RoundTrip()
	// StoreError reports a failed Redis call (a charge, a probe PING).
	StoreError(err error)
	// Fallback reports entering (true) or leaving (false) fallback mode.
	Fallback(active bool)
	// Confirmation reports the outcome of a PING that confirmed
	// RedisConfig.TimeoutsToFail timeouts in a row.
	Confirmation(answered bool)
	// Evicted reports a principal's entry dropped, while its window ran,
	// to make room under Config.MaxPrincipals.
	Evicted()
}

// Config configures a Limiter. The zero value works: 60 frames per
// principal per second, counted in process memory only.
type Config struct {
	// Limit is the most frames one principal may publish per Window under
	// the global limit (a Limit with an empty Rule and zero Limit takes
	// it). Zero means DefaultLimit; negative is an error.
	Limit int
	// Window is the fixed window. Zero means DefaultWindow; negative is
	// an error.
	Window time.Duration
	// Optimistic is the most frames of one principal this instance
	// passes in a window before Redis has counted them (see the package
	// documentation: the overshoot across K instances is at most K times
	// it). Zero means a limit's DefaultOptimisticShare-th part (rounded
	// down, so a limit below 10 asks Redis for each frame until it is
	// over); negative is an error. It is capped at each limit.
	Optimistic int
	// Redis holds the counts shared by every instance. Nil means each
	// instance counts its own frames only.
	Redis *RedisStore
	// MaxPrincipals bounds the entries kept in memory, one per principal
	// and rule publishing in a window. Zero means DefaultMaxPrincipals;
	// negative is an error.
	MaxPrincipals int
	// RetryInterval is how often, at most, a charge tries Redis again in
	// fallback mode, and how often the background probe PINGs it. Zero
	// means DefaultRetryInterval; negative is an error.
	RetryInterval time.Duration
	// ConfirmTimeout bounds the PING that must fail before timeouts alone
	// start fallback mode. Zero means fallback.DefaultConfirmTimeout;
	// negative is an error.
	ConfirmTimeout time.Duration
	// Logger receives a Warn when fallback mode starts and an Info when
	// it ends. Nil means slog.Default().
	Logger *slog.Logger
	// Observer, if not nil, is told about decisions and fallback changes.
	Observer Observer
	// Now is the clock of RetryInterval. Nil means time.Now.
	Now func() time.Time
}

// Limiter holds each principal to a number of frames per fixed window,
// across instances when it has a RedisStore, with a pre-check in memory
// so that most frames never cost a round trip (see the package
// documentation for the model and its bound). A Limiter is safe for
// concurrent use. Create it with New and Close it when done.
type Limiter struct {
	cfg     Config
	entries *table
	// fallback is the Redis outage state: the mode, the retry pacing and
	// the background probe.
	fallback *fallback.Switch
	// precheck is false only in the benchmark's baseline: every frame
	// then asks Redis, as a limiter without the pre-check would.
	precheck bool
}

// New returns a Limiter configured by cfg.
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Limit < 0:
		return nil, configErrorf("Config.Limit %d is negative", cfg.Limit)
	case cfg.Window < 0:
		return nil, configErrorf("Config.Window %v is negative", cfg.Window)
	case cfg.Optimistic < 0:
		return nil, configErrorf("Config.Optimistic %d is negative", cfg.Optimistic)
	case cfg.MaxPrincipals < 0:
		return nil, configErrorf("Config.MaxPrincipals %d is negative", cfg.MaxPrincipals)
	case cfg.RetryInterval < 0:
		return nil, configErrorf("Config.RetryInterval %v is negative", cfg.RetryInterval)
	case cfg.ConfirmTimeout < 0:
		return nil, configErrorf("Config.ConfirmTimeout %v is negative", cfg.ConfirmTimeout)
	}
	if cfg.Limit == 0 {
		cfg.Limit = DefaultLimit
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxPrincipals == 0 {
		cfg.MaxPrincipals = DefaultMaxPrincipals
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Limiter{cfg: cfg, precheck: true}
	l.entries = newTable(cfg.MaxPrincipals, func() { l.cfg.Observer.Evicted() })
	fcfg := fallback.Config{
		RetryInterval:  cfg.RetryInterval,
		ProbeInterval:  cfg.RetryInterval,
		ConfirmTimeout: cfg.ConfirmTimeout,
		Now:            cfg.Now,
		Ping:           func(context.Context) error { return nil },
		Name:           "principallimit",
		Mode:           "each instance holds every principal to the limit on its own frames",
		Logger:         cfg.Logger,
		Changed:        func(active bool) { l.cfg.Observer.Fallback(active) },
		StoreError:     func(err error) { l.cfg.Observer.StoreError(err) },
		Confirmed:      func(answered bool) { l.cfg.Observer.Confirmation(answered) },
	}
	if r := cfg.Redis; r != nil {
		fcfg.UseRedis(r.client, r.health, r.timeout)
	}
	l.fallback = fallback.New(fcfg)
	return l, nil
}

// Global returns the global limit: Config.Limit per Config.Window.
func (l *Limiter) Global() Limit { return Limit{Limit: l.cfg.Limit, Window: l.cfg.Window} }

// optimistic returns how many frames of a principal under limit this
// instance passes in a window before Redis counted them.
func (l *Limiter) optimistic(limit int) int {
	o := l.cfg.Optimistic
	if o == 0 {
		o = limit / DefaultOptimisticShare
	}
	return min(o, limit)
}

// AllowAt reports whether principal may publish n more frames at now
// under lim: all n pass or none does. An empty principal and n below 1
// pass uncounted. A round trip, when one is needed, is bounded by the
// RedisStore's Timeout and made with the principal's entry locked, so
// that the principal's other frames on this instance wait for its answer
// rather than guess.
func (l *Limiter) AllowAt(now time.Time, principal string, n int, lim Limit) Decision {
	if lim.Limit <= 0 || n < 1 || principal == "" {
		return Decision{Allowed: true, Source: SourceLocal}
	}
	if lim.Window <= 0 {
		lim.Window = l.cfg.Window
	}
	e := l.entries.get(now, lim.Rule, principal)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.roll(now, lim.Window)
	d := l.decide(e, now, principal, n, lim)
	if d.Allowed {
		e.passed += n
	}
	e.setEnd()
	l.cfg.Observer.Decision(d)
	return d
}

// decide answers for n frames of the entry e, locked and in its window.
func (l *Limiter) decide(e *entry, now time.Time, principal string, n int, lim Limit) Decision {
	switch {
	case l.cfg.Redis == nil || e.stale:
		return e.memory(n, lim.Limit)
	case e.over && l.precheck:
		return Decision{Source: SourceLocal}
	case l.precheck && e.unreported+n <= l.optimistic(lim.Limit):
		e.unreported += n
		return Decision{Allowed: true, Source: SourceLocal}
	}
	var c Charge
	res, err := l.fallback.Try(context.Background(), l.cfg.Now(), func() (err error) {
		l.cfg.Observer.RoundTrip()
		c, err = l.cfg.Redis.Charge(context.Background(), principal, lim.Rule, e.unreported, n, lim.Limit, lim.Window)
		return err
	})
	switch {
	case err == nil && res == fallback.Answered:
		e.unreported = 0
		e.over = !c.Allowed || c.Count >= lim.Limit
		e.end = now.Add(c.Left)
		return Decision{Allowed: c.Allowed, Source: SourceRedis}
	case res == fallback.Local:
		// Redis is not judged failing, but this window is decided here:
		// another call would most likely time out again.
		e.stale = true
	}
	return e.memory(n, lim.Limit)
}

// InFallback reports whether the Limiter is in fallback mode: Redis is
// configured but judged failing.
func (l *Limiter) InFallback() bool { return l.fallback.Active() }

// Close stops the background probe and a confirmation under way, and
// waits for them. The Limiter keeps deciding afterwards. Close is
// idempotent and returns nil.
func (l *Limiter) Close() error {
	l.fallback.Close()
	return nil
}

// entry is one principal's state under one rule on this instance, for
// its current window.
type entry struct {
	// mu guards every field below, and is held across a round trip.
	mu sync.Mutex
	// end is when the window ends by this instance's clock: a local guess
	// (the first frame plus the window) until Redis answers with what is
	// left of its own window.
	end time.Time
	// passed counts the frames passed here in the window, whoever
	// decided; the memory decision holds it to the limit.
	passed int
	// unreported counts the frames passed optimistically and not yet
	// charged to Redis.
	unreported int
	// over is set when Redis answered that the principal is at or over
	// the limit: every frame is dropped here until end.
	over bool
	// stale is set when a charge failed in this window while Redis was
	// not judged failing: the window is decided on passed.
	stale bool

	// expires mirrors end for the table's sweep, which reads it without
	// mu (Unix ns).
	expires atomic.Int64
}

// roll starts a new window at now if the entry's has ended (lazy reset).
func (e *entry) roll(now time.Time, window time.Duration) {
	if now.Before(e.end) {
		return
	}
	e.end = now.Add(window)
	e.passed, e.unreported = 0, 0
	e.over, e.stale = false, false
}

// setEnd publishes end for the table's sweep.
func (e *entry) setEnd() { e.expires.Store(e.end.UnixNano()) }

// memory decides n frames on this instance's own count.
func (e *entry) memory(n, limit int) Decision {
	return Decision{Allowed: e.passed+n <= limit, Source: SourceMemory}
}

// nopObserver is the Observer used when none is configured.
type nopObserver struct{}

func (nopObserver) Decision(Decision) {}
func (nopObserver) RoundTrip()        {}
func (nopObserver) StoreError(error)  {}
func (nopObserver) Fallback(bool)     {}
func (nopObserver) Confirmation(bool) {}
func (nopObserver) Evicted()          {}
