package handshake

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/internal/fallback"
)

// DefaultRetryInterval is the default Config.RetryInterval.
const DefaultRetryInterval = time.Second

// failClosedRetryAfter is the RetryAfter of a refusal made because Redis is
// down and Config.FailClosed is set: the client may try again once the next
// probe could have found Redis back.
const failClosedRetryAfter = time.Second

// Observer is told about every decision and every change of store, for
// metrics. Its methods are called synchronously on the request's goroutine
// and must be fast and safe for concurrent use.
type Observer interface {
	// Decision reports a decision and how long it took, fallback included.
	Decision(r Result, elapsed time.Duration)
	// StoreError reports that a store (StoreRedis) failed a call.
	StoreError(store string, err error)
	// Fallback reports entering (true) or leaving (false) fallback mode.
	Fallback(active bool)
	// Confirmation reports the outcome of a PING that confirmed
	// RedisConfig.TimeoutsToFail timeouts in a row: answered (true,
	// fallback mode not entered) or not (false, entered).
	Confirmation(answered bool)
}

// Config configures a Limiter. The zero value works: decisions are made in
// process memory only.
type Config struct {
	// Redis is the primary store. Nil means no Redis: Memory decides alone.
	Redis *RedisStore
	// Memory is the in-process store: the only store without Redis, the
	// fallback with it. Nil means a MemoryStore with the default
	// MemoryConfig (and Now, if set).
	Memory *MemoryStore
	// FailClosed makes the Limiter refuse every request while Redis is
	// down (Result.Store StoreNone, RetryAfter 1s) instead of deciding in
	// Memory. The default, false, fails open to Memory: each instance then
	// enforces the limit on the traffic it sees.
	FailClosed bool
	// RetryInterval is how often, at most, one request tries Redis again
	// while in fallback mode; the others are decided without touching
	// Redis. Zero means DefaultRetryInterval; negative is an error.
	RetryInterval time.Duration
	// ProbeInterval is how often a background probe PINGs Redis while
	// the Limiter is in fallback mode and no request has tried Redis
	// within RetryInterval, so that fallback mode (and the Observer's
	// gauge) ends within about one interval of Redis coming back even
	// when no handshake arrives. The probe is one goroutine, started on
	// entering fallback mode and ended on leaving it or by Close; each
	// PING is bounded by RedisConfig.Timeout. Zero means RetryInterval;
	// negative turns the background probe off, leaving only requests to
	// probe.
	ProbeInterval time.Duration
	// ConfirmTimeout bounds the PING that must fail before timeouts alone
	// (RedisConfig.TimeoutsToFail in a row) start fallback mode: one at
	// a time, on a goroutine of the Limiter that Close waits for. It is
	// longer than RedisConfig.Timeout so that a Redis that answers, late
	// because this server's CPU is saturated, is told from one that does
	// not. Zero means fallback.DefaultConfirmTimeout (1s); negative is an
	// error.
	ConfirmTimeout time.Duration
	// Logger receives a Warn when fallback mode starts and an Info when it
	// ends; nothing per request. Nil means slog.Default().
	Logger *slog.Logger
	// ShedKeys bounds the keys the Limiter remembers in order to shed
	// decisions for them locally, before they queue for Redis (see
	// Limiter): a key is kept while Redis's refusal of it lasts or while
	// it has decisions on their way. When the bound is reached a new key
	// is not remembered and its decisions go to Redis unshed. Zero means
	// DefaultShedKeys; negative turns shedding off.
	ShedKeys int
	// MaxInFlightPerKey is the most decisions for one key on their way to
	// Redis at once; one more is refused locally (Result.Local
	// LocalInFlight, RetryAfter the time the bucket takes to drain one
	// request). Zero means the limit's Burst+1, the most requests that can
	// pass at one instant; negative means no bound. A value below
	// Burst+1 refuses part of a burst that Redis would let through.
	// Unused with ShedKeys negative.
	MaxInFlightPerKey int
	// Observer, if not nil, is told about decisions, store errors and
	// fallback changes.
	Observer Observer
	// Now is the clock used for RetryInterval and elapsed times. Nil means
	// time.Now.
	Now func() time.Time
}

// Limiter is the Store the middleware uses: Redis when it answers, the
// in-process MemoryStore (or a refusal, with FailClosed) when it does not.
//
// Fallback mode starts only on evidence that Redis itself is failing: a
// round trip that failed with a refused or reset connection or an error
// reply, or RedisConfig.TimeoutsToFail round trips in a row that timed out
// (RedisConfig.Timeout, 50ms by default, measured from when the command is
// written) and then a PING bounded by Config.ConfirmTimeout (1s) that
// failed or timed out too; timeouts noticed late, because this server's
// CPU kept the reader from running, do not count (see fallback.Health).
// Then the Limiter logs once, notifies the Observer and decides
// in memory (or refuses, with FailClosed). While in fallback, one request
// per RetryInterval tries Redis again; the first success leaves fallback
// mode. A request whose own context ends is not a Redis failure: Allow
// returns the context's error.
//
// A decision that misses its answer while Redis is not judged failing
// (the queue was full, it waited RedisConfig.MaxQueueWait, or its one
// round trip timed out) is this server's backlog or a hiccup, not an
// outage: it is decided in Memory, whatever FailClosed says, for a key
// Memory holds no state for and with no other decision on its way, and
// otherwise refused (a key in a flood gets no admission Redis did not
// give); Result.Local says why. Every request Redis admits is also counted in
// Memory, so Memory holds at least this instance's share of each key's
// bucket: a key that flooded through Redis is not given a fresh burst by
// such a decision or by fallback mode. No decision waits longer than
// MaxQueueWait + Timeout.
//
// One key cannot fill the queue for others: decisions are shed, refused
// locally without asking Redis (Result.Store StoreLocal), when Redis
// refused the key within the Retry-After it gave (LocalRefused), or when
// MaxInFlightPerKey of its decisions are already on their way
// (LocalInFlight). Shedding keeps limit_req's answers: a request refused
// as LocalRefused is one Redis would refuse too (the local refusal ends
// no later than Redis's, see shedTable.release), except after a ban lifted
// early on another instance (a ban lifted through this Limiter's Ban is
// forgotten at once). A request refused as LocalInFlight is one Redis
// would refuse too as long as the Burst+1 decisions ahead of it and it are
// decided within one drip of the bucket (1000/rate ms, 333 ms at 3 r/s):
// from rest at most Burst+1 requests pass at once, and a decision takes
// about a round trip.
//
// While in fallback mode a background probe (Config.ProbeInterval) also
// tries Redis, so that the Limiter leaves fallback mode, and tells its
// Observer, within about one interval of Redis answering again, whether or
// not requests arrive. Close stops it.
//
// A Limiter is safe for concurrent use. Create it with New.
type Limiter struct {
	redis      *RedisStore
	memory     *MemoryStore
	failClosed bool
	observer   Observer
	now        func() time.Time
	// shed sheds decisions locally; nil when Config.ShedKeys is negative.
	shed *shedTable

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
	if cfg.ShedKeys == 0 {
		cfg.ShedKeys = DefaultShedKeys
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = cfg.RetryInterval
	}
	if cfg.Memory == nil {
		m, err := NewMemoryStore(MemoryConfig{Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		cfg.Memory = m
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
		memory:     cfg.Memory,
		failClosed: cfg.FailClosed,
		observer:   cfg.Observer,
		now:        cfg.Now,
	}
	if cfg.ShedKeys > 0 {
		l.shed = newShedTable(cfg.ShedKeys, cfg.MaxInFlightPerKey)
	}
	mode := "deciding in process memory"
	if cfg.FailClosed {
		mode = "refusing every handshake (fail closed)"
	}
	fcfg := fallback.Config{
		RetryInterval:  cfg.RetryInterval,
		ProbeInterval:  cfg.ProbeInterval,
		ConfirmTimeout: cfg.ConfirmTimeout,
		Now:            cfg.Now,
		Ping:           func(context.Context) error { return nil },
		Name:           "handshake",
		Mode:           mode,
		Logger:         cfg.Logger,
		Changed:        func(active bool) { l.observer.Fallback(active) },
		StoreError:     func(err error) { l.observer.StoreError(StoreRedis, err) },
		Confirmed:      func(answered bool) { l.observer.Confirmation(answered) },
	}
	if r := cfg.Redis; r != nil {
		fcfg.UseRedis(r.client, r.health, r.timeout)
	}
	l.fallback = fallback.New(fcfg)
	return l, nil
}

// Close stops the background probe and waits for it. The Limiter still
// decides after Close, with no background probe: requests alone try
// Redis again. Close is idempotent and always returns nil.
func (l *Limiter) Close() error {
	l.fallback.Close()
	return nil
}

// Allow decides one request for key under l. It returns an error only for
// an empty key, an invalid limit, or when ctx ended; Redis failures are
// handled by falling back.
func (l *Limiter) Allow(ctx context.Context, key string, lim Limit) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := lim.Validate(); err != nil {
		return Result{}, err
	}
	start := l.now()
	r, err := l.decide(ctx, key, lim, start)
	if err != nil {
		return Result{}, err
	}
	l.observer.Decision(r, l.now().Sub(start))
	return r, nil
}

func (l *Limiter) decide(ctx context.Context, key string, lim Limit, start time.Time) (Result, error) {
	if l.redis == nil {
		return l.memory.Allow(ctx, key, lim)
	}
	tracked := false
	// In fallback mode decisions are made in memory, which costs little:
	// shedding guards the queue for Redis.
	if l.shed != nil && !l.fallback.Active() {
		r, shed, t := l.shed.acquire(key, lim, start)
		if shed {
			return r, nil
		}
		tracked = t
	}
	if !l.fallback.ShouldTry(start) {
		if tracked {
			l.shed.release(key, start, Result{}, errNotAsked)
		}
		return l.fallbackDecision(ctx, key, lim)
	}
	r, err := l.redis.Allow(ctx, key, lim)
	others := 0
	if tracked {
		others = l.shed.release(key, start, r, err)
	}
	if err == nil {
		l.fallback.Succeeded()
		if r.Allowed {
			// Memory keeps this instance's share of the bucket (see
			// Limiter); its answer does not matter here.
			_, _ = l.memory.Allow(ctx, key, lim)
		}
		return r, nil
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	if l.redisFailed(start, err) {
		return l.fallbackDecision(ctx, key, lim)
	}
	local := localReason(err)
	if others > 0 || l.memory.known(key, lim.Name) {
		// Memory admits only a key it has not seen: one with other
		// decisions on their way, or admitted lately, may be flooding,
		// and Memory's answer, unknown to Redis, could admit it beyond
		// the limit. An honest client's one request passes.
		return Result{RetryAfter: drip(lim), Store: StoreLocal, Local: local}, nil
	}
	r, err = l.memory.Allow(ctx, key, lim)
	r.Local = local
	return r, err
}

// errNotAsked releases a shed slot whose decision never went to Redis.
var errNotAsked = errors.New("handshake: redis not asked")

// redisFailed handles err, the failure of one Redis call at now while
// ctx is live: it reports whether Redis is judged failing, in which case
// fallback mode has started (or goes on); see fallback.Switch.Judge. A
// failure that does not make Redis failing (yet) is still a store error;
// one that never reached Redis (a full queue, a long wait in it) is not.
func (l *Limiter) redisFailed(now time.Time, err error) bool {
	if !errors.Is(err, ErrQueueFull) && !errors.Is(err, ErrQueueWait) {
		l.observer.StoreError(StoreRedis, err)
	}
	return l.fallback.Judge(now, err)
}

// localReason is Result.Local for a decision whose Redis call failed with
// err although Redis is not judged failing.
func localReason(err error) string {
	switch {
	case errors.Is(err, ErrQueueFull):
		return LocalQueueFull
	case errors.Is(err, ErrQueueWait):
		return LocalQueueWait
	default:
		return LocalTimeout
	}
}

func (l *Limiter) fallbackDecision(ctx context.Context, key string, lim Limit) (Result, error) {
	if l.failClosed {
		return Result{RetryAfter: failClosedRetryAfter, Store: StoreNone}, nil
	}
	return l.memory.Allow(ctx, key, lim)
}

// Ban bans key for d in memory and, when configured, in Redis, so the ban
// holds in fallback mode too (Allow and Banned then answer from memory);
// d of zero or less lifts it. It writes Redis even in fallback mode: a ban
// is rare and worth one Redis timeout. An error means
// the Redis part failed: the ban then holds on this instance only.
func (l *Limiter) Ban(ctx context.Context, key string, d time.Duration) error {
	if err := l.memory.Ban(ctx, key, d); err != nil {
		return err
	}
	if d <= 0 && l.shed != nil {
		l.shed.forget(key)
	}
	if l.redis == nil {
		return nil
	}
	if err := l.redis.Ban(ctx, key, d); err != nil {
		if ctx.Err() == nil {
			l.observer.StoreError(StoreRedis, err)
		}
		return err
	}
	return nil
}

// Banned reports whether key is banned and for how much longer, without
// counting a request: it is the ban check of Allow alone, for keys that are
// only known after the handshake (a principal, at CONNECT).
//
// It asks Redis when Redis is configured and answers, and otherwise (no
// Redis, or fallback mode) process memory, with the same fallback
// bookkeeping as Allow: a failure that shows Redis failing enters fallback
// mode, a failure is reported to the Observer, a successful probe leaves it. FailClosed does
// not apply: a ban check that cannot reach Redis answers from memory, which
// holds every ban this instance recorded (Ban writes memory first), and
// otherwise answers not banned. Refusing every principal because Redis is
// down would turn an outage into a lockout; the handshake itself is already
// refused in that mode.
//
// It returns an error only for an empty key or when ctx ended. Banned does
// not call Observer.Decision: it decides no request.
func (l *Limiter) Banned(ctx context.Context, key string) (retryAfter time.Duration, banned bool, err error) {
	if key == "" {
		return 0, false, ErrEmptyKey
	}
	if l.redis == nil {
		return l.memory.Banned(ctx, key)
	}
	now := l.now()
	if !l.fallback.ShouldTry(now) {
		return l.memory.Banned(ctx, key)
	}
	retryAfter, banned, err = l.redis.Banned(ctx, key)
	if err == nil {
		l.fallback.Succeeded()
		return retryAfter, banned, nil
	}
	if ctx.Err() != nil {
		return 0, false, ctx.Err()
	}
	l.redisFailed(now, err)
	return l.memory.Banned(ctx, key)
}

// InFallback reports whether the Limiter is in fallback mode: Redis is
// configured but failed its last call.
func (l *Limiter) InFallback() bool {
	return l.fallback.Active()
}

// nopObserver is the Observer used when Config.Observer is nil.
type nopObserver struct{}

func (nopObserver) Decision(Result, time.Duration) {}
func (nopObserver) StoreError(string, error)       {}
func (nopObserver) Fallback(bool)                  {}
func (nopObserver) Confirmation(bool)              {}
