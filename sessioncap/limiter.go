package sessioncap

import (
	"context"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/outcome"
)

// Scopes of a cap: what its keys name. Each is a bounded metric label.
const (
	// ScopeIP keys a cap by zone and client IP (the Middleware).
	ScopeIP = outcome.CapScopeIP
	// ScopePrincipal keys a cap by principal name (the PrincipalStage).
	ScopePrincipal = outcome.CapScopePrincipal
)

// Stores that answer a Decision.
const (
	// StoreRedis: the shared lease sets in Redis decided.
	StoreRedis = outcome.StoreRedis
	// StoreMemory: this instance's own count decided (no Redis, or Redis
	// unreachable and fail-open).
	StoreMemory = outcome.StoreMemory
	// StoreNone: Redis was unreachable and the Limiter fails closed, so
	// the session was refused undecided.
	StoreNone = outcome.StoreNone
)

// DefaultRetryInterval is the default Config.RetryInterval.
const DefaultRetryInterval = time.Second

// Decision is the answer to one Acquire.
type Decision struct {
	// Allowed is true when a slot was taken: the session may start, and
	// its Lease must be released when it ends.
	Allowed bool
	// Held is how many sessions the key held before this one, as the
	// deciding store counted them; 0 with StoreNone.
	Held int
	// Store is StoreRedis, StoreMemory or StoreNone.
	Store string
	// Local is true when this instance's own count decided (StoreMemory)
	// because the Redis call failed while Redis was not judged failing
	// (a timeout, likelier this server's load than an outage): FailClosed
	// does not apply to such a decision.
	Local bool
	// TimedOut is true when the Middleware gave up waiting for the
	// decision (MiddlewareConfig.AcquireTimeout) and refused the session
	// undecided; Store is then StoreNone. The Limiter never sets it.
	TimedOut bool
}

// Handshake is how a handshake ends when d answers its per-IP cap: nil
// when Allowed, HandshakeSessionCapTimeout when the Middleware gave up
// waiting, HandshakeStoreError when no store answered,
// HandshakeRejectedSessionCap otherwise. (A refusal at the per-principal
// cap ends the session instead: RejectSessionCap.)
func (d Decision) Handshake() *outcome.Handshake {
	switch {
	case d.Allowed:
		return nil
	case d.TimedOut:
		return outcome.HandshakeSessionCapTimeout
	case d.Store == StoreNone:
		return outcome.HandshakeStoreError
	}
	return outcome.HandshakeRejectedSessionCap
}

// Lease is a slot held for one session. The zero Lease holds nothing;
// releasing it does nothing.
type Lease struct {
	scope string
	key   string // scope:name, as the stores see it
	id    string // the Redis lease id; empty when Redis did not decide
}

// Held reports whether l holds a slot.
func (l Lease) Held() bool { return l.key != "" }

// Observer is told about decisions, releases and the fallback state, for
// metrics. Its methods are called synchronously and must be fast and safe
// for concurrent use. It includes RedisObserver so that one value can
// serve the Limiter and its RedisStore.
type Observer interface {
	RedisObserver
	// Decision reports one Acquire of scope.
	Decision(scope string, d Decision)
	// Released reports that a slot of scope was given back.
	Released(scope string)
	// Fallback reports entering (true) or leaving (false) fallback mode.
	Fallback(active bool)
	// Confirmation reports the outcome of a PING that confirmed
	// RedisConfig.TimeoutsToFail timeouts in a row: answered (true,
	// fallback mode not entered) or not (false, entered).
	Confirmation(answered bool)
	// Displaced reports n sessions of scope that lost their slot to a
	// newer session of the same key (see PrincipalConfig.Displace).
	Displaced(scope string, n int)
}

// Config configures a Limiter. The zero value works: sessions are counted
// in process memory only.
type Config struct {
	// Redis holds the shared leases. Nil means no Redis: each instance
	// counts its own sessions.
	Redis *RedisStore
	// FailClosed refuses every session (Decision.Store StoreNone) while
	// Redis is unreachable, instead of deciding on this instance's own
	// count.
	FailClosed bool
	// RetryInterval is how often, at most, one Acquire tries Redis again
	// in fallback mode, and how often the background probe PINGs it. Zero
	// means DefaultRetryInterval; negative is an error.
	RetryInterval time.Duration
	// ConfirmTimeout bounds the PING that must fail before timeouts alone
	// (RedisConfig.TimeoutsToFail in a row) start fallback mode: one at a
	// time, on a goroutine of the Limiter that Close waits for. Zero means
	// fallback.DefaultConfirmTimeout (1s); negative is an error.
	ConfirmTimeout time.Duration
	// Logger receives a Warn when fallback mode starts and an Info when it
	// ends. Nil means slog.Default().
	Logger *slog.Logger
	// Observer, if not nil, is told about decisions, releases and
	// fallback changes.
	Observer Observer
	// Now is the clock of RetryInterval. Nil means time.Now.
	Now func() time.Time
}

// Limiter takes and gives back session slots: in Redis when it answers,
// on this instance's own count (or by refusing, with FailClosed) when it
// does not. It always keeps the instance's own count, of every session it
// admitted, so that in fallback mode the cap still holds on this
// instance. See the package documentation.
//
// Fallback mode, and with FailClosed the refusal of every new session,
// starts only on evidence that Redis itself is failing, judged as the
// handshake limiter judges it (fallback.Health): a refused or reset
// connection or an error reply at once; timeouts only when
// RedisConfig.TimeoutsToFail calls in a row timed out and then a PING
// bounded by ConfirmTimeout failed too. An acquire that timed out short
// of that says nothing about Redis (this server's CPU may have kept the
// answer unread): it is decided on this instance's own count, fail mode
// notwithstanding (Decision.Local).
//
// A Limiter is safe for concurrent use. Create it with New and Close it
// after its sessions ended.
type Limiter struct {
	redis      *RedisStore
	memory     *MemoryStore
	failClosed bool
	observer   Observer
	now        func() time.Time

	// fallback is the Redis outage state: the mode, the retry pacing and
	// the background probe.
	fallback *fallback.Switch
}

// New returns a Limiter configured by cfg.
func New(cfg Config) (*Limiter, error) {
	if cfg.RetryInterval < 0 {
		return nil, configErrorf("Config.RetryInterval %v is negative", cfg.RetryInterval)
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.ConfirmTimeout < 0 {
		return nil, configErrorf("Config.ConfirmTimeout %v is negative", cfg.ConfirmTimeout)
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
	l := &Limiter{
		redis:      cfg.Redis,
		memory:     NewMemoryStore(),
		failClosed: cfg.FailClosed,
		observer:   cfg.Observer,
		now:        cfg.Now,
	}
	mode := "counting this instance's sessions only"
	if cfg.FailClosed {
		mode = "refusing every new session (fail closed)"
	}
	fcfg := fallback.Config{
		RetryInterval:  cfg.RetryInterval,
		ProbeInterval:  cfg.RetryInterval,
		ConfirmTimeout: cfg.ConfirmTimeout,
		Now:            cfg.Now,
		Ping:           func(context.Context) error { return nil },
		Name:           "sessioncap",
		Mode:           mode,
		Logger:         cfg.Logger,
		Changed:        func(active bool) { l.observer.Fallback(active) },
		StoreError:     l.observer.StoreError,
		Confirmed:      func(answered bool) { l.observer.Confirmation(answered) },
	}
	if r := cfg.Redis; r != nil {
		fcfg.UseRedis(r.client, r.health, r.timeout)
	}
	l.fallback = fallback.New(fcfg)
	return l, nil
}

// Acquire takes a slot of name under scope if it holds fewer than max
// sessions. It returns an error only for an empty name, a max below 1, or
// when ctx ended; Redis failures are handled by falling back. A Lease
// whose Decision is allowed must be given to Release when its session
// ends.
func (l *Limiter) Acquire(ctx context.Context, scope, name string, max int) (Lease, Decision, error) {
	lease, d, _, err := l.AcquireFor(ctx, scope, name, max, "", false)
	return lease, d, err
}

// AcquireFor is Acquire for a session that owner names (its id). With
// displace, a key that Redis finds at max makes room by dropping its
// oldest leases instead of refusing, and returns their owners, which the
// caller ends wherever they run. Deciding on this instance's own count (no
// Redis, in fallback, or Decision.Local) never displaces: the caller,
// which knows its own sessions, does that (see PrincipalStage).
func (l *Limiter) AcquireFor(ctx context.Context, scope, name string, max int, owner string, displace bool) (Lease, Decision, []string, error) {
	if name == "" {
		return Lease{}, Decision{}, nil, ErrEmptyKey
	}
	if max < 1 {
		return Lease{}, Decision{}, nil, ErrInvalidMax
	}
	key := scope + ":" + name
	local := false
	if l.redis != nil {
		var (
			id        string
			held      int
			ok        bool
			displaced []string
		)
		outcome, err := l.fallback.Try(ctx, l.now(), func() (err error) {
			id, held, ok, displaced, err = l.redis.AcquireFor(ctx, key, max, owner, displace)
			return err
		})
		if err != nil {
			return Lease{}, Decision{}, nil, err
		}
		switch {
		case outcome == fallback.Answered:
			d := Decision{Allowed: ok, Held: held, Store: StoreRedis}
			l.observer.Decision(scope, d)
			if len(displaced) > 0 {
				l.observer.Displaced(scope, len(displaced))
			}
			if !ok {
				return Lease{}, d, nil, nil
			}
			l.memory.Add(key)
			owners := make([]string, 0, len(displaced))
			for _, m := range displaced {
				owners = append(owners, LeaseOwner(m))
			}
			return Lease{scope: scope, key: key, id: id}, d, owners, nil
		case outcome == fallback.Fallback && l.failClosed:
			d := Decision{Store: StoreNone}
			l.observer.Decision(scope, d)
			return Lease{}, d, nil, nil
		}
		local = outcome == fallback.Local
	}
	return l.acquireLocal(scope, key, max, local)
}

// acquireLocal decides on this instance's own count; local says that
// Redis was asked, failed and is not judged failing (Decision.Local).
func (l *Limiter) acquireLocal(scope, key string, max int, local bool) (Lease, Decision, []string, error) {
	held, ok := l.memory.TryAcquire(key, max)
	d := Decision{Allowed: ok, Held: held, Store: StoreMemory, Local: local}
	l.observer.Decision(scope, d)
	if !ok {
		return Lease{}, d, nil, nil
	}
	return Lease{scope: scope, key: key}, d, nil, nil
}

// Release gives back the slot lease holds. The Redis part is bounded by
// RedisConfig.Timeout; if it fails the lease, no longer renewed, expires
// within the lease TTL. Releasing the zero Lease does nothing; a Lease
// must be released once.
func (l *Limiter) Release(lease Lease) {
	if !lease.Held() {
		return
	}
	l.memory.Release(lease.key)
	l.observer.Released(lease.scope)
	if lease.id == "" || l.redis == nil {
		return
	}
	if err := l.redis.Release(context.Background(), lease.key, lease.id); err != nil {
		l.observer.StoreError(err)
	}
}

// Held returns how many sessions this instance holds for name under
// scope.
func (l *Limiter) Held(scope, name string) int {
	return l.memory.Held(scope + ":" + name)
}

// InFallback reports whether the Limiter is in fallback mode: Redis is
// configured but failed its last call.
func (l *Limiter) InFallback() bool { return l.fallback.Active() }

// Close stops the background probe and waits for it. It neither releases
// leases nor closes the RedisStore. Close is idempotent and returns nil.
func (l *Limiter) Close() error {
	l.fallback.Close()
	return nil
}

// nopObserver is the Observer used when none is configured.
type nopObserver struct{}

func (nopObserver) Decision(string, Decision) {}
func (nopObserver) Released(string)           {}
func (nopObserver) Fallback(bool)             {}
func (nopObserver) Confirmation(bool)         {}
func (nopObserver) Displaced(string, int)     {}
func (nopObserver) StoreError(error)          {}
func (nopObserver) LeasesRestored(int)        {}
