package reconnect

import (
	"context"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/outcome"
)

// Defaults of Config, after EMQX's flapping detection (15 connects a
// minute, then banned for 5 minutes).
const (
	// DefaultLimit is the default Config.Limit: a person reloading a page,
	// losing a train's Wi-Fi or switching tabs reconnects a few times a
	// minute; fifteen leaves room for all of it behind one office NAT,
	// while a client stuck in a loop with a one-second backoff passes it
	// within a quarter of a minute.
	DefaultLimit = 15
	// DefaultWindow is the default Config.Window.
	DefaultWindow = time.Minute
	// DefaultBan is the default StageConfig.BanFor: five windows, long
	// enough that a loop's retries stop costing anything, short enough
	// that a client which was only unlucky comes back within minutes.
	DefaultBan = 5 * time.Minute
	// DefaultRetryInterval is the default Config.RetryInterval.
	DefaultRetryInterval = time.Second
)

// Stores that answer a count: the store label of the metrics.
const (
	// StoreRedis: the shared count in Redis answered.
	StoreRedis = outcome.StoreRedis
	// StoreMemory: this instance's own count answered (no Redis, Redis
	// unreachable, or a Redis call that failed).
	StoreMemory = outcome.StoreMemory
)

// Scopes of a count: what its key names. Each is a bounded metric label.
const (
	// ScopeAddress: a client address (clientip.Key: an IPv4 address or an
	// IPv6 prefix).
	ScopeAddress = outcome.ReconnectScopeAddress
	// ScopePrincipal: a verified principal's name.
	ScopePrincipal = outcome.ReconnectScopePrincipal
)

// Observer is told about counts, bans and the fallback state, for
// metrics. Its methods are called synchronously on sessions' reader
// goroutines and must be fast and safe for concurrent use.
type Observer interface {
	// Counted reports one CONNECT counted under scope by store.
	Counted(scope, store string)
	// Banned reports a key of scope banned for a reconnect loop.
	Banned(scope string)
	// StoreError reports a failed Redis call (a count or a probe PING).
	StoreError(err error)
	// Fallback reports entering (true) or leaving (false) fallback mode.
	Fallback(active bool)
}

// Config configures a Counter. The zero value works: 15 CONNECTs a
// minute, counted in process memory.
type Config struct {
	// Limit is the most CONNECTs one key may complete per Window; the
	// one after is over (Count.Over). Zero means DefaultLimit; negative
	// is an error. (Turning the counting off is not the Counter's
	// business: do not install the Stage.)
	Limit int
	// Window is the length of a key's counting window, which starts at
	// its first CONNECT. Zero means DefaultWindow; negative or below a
	// millisecond is an error.
	Window time.Duration
	// Redis is the shared store. Nil means none: Memory counts alone,
	// per instance.
	Redis *RedisStore
	// Memory is this instance's own count: the only store without Redis,
	// the fallback with it. Nil means a MemoryStore with the default
	// MemoryConfig.
	Memory *MemoryStore
	// RetryInterval is how often, at most, one count tries Redis again in
	// fallback mode, and how often the background probe PINGs it. Zero
	// means DefaultRetryInterval; negative is an error.
	RetryInterval time.Duration
	// ConfirmTimeout bounds the PING that must fail before timeouts alone
	// (RedisConfig.TimeoutsToFail in a row) start fallback mode. Zero
	// means fallback.DefaultConfirmTimeout (1s); negative is an error.
	ConfirmTimeout time.Duration
	// Logger receives a Warn when fallback mode starts and an Info when
	// it ends, and one Warn per ban. Nil means slog.Default().
	Logger *slog.Logger
	// Observer, if not nil, is told about counts, bans and fallback
	// changes.
	Observer Observer
	// Now is the clock of RetryInterval. Nil means time.Now.
	Now func() time.Time
}

// Count is the answer to one Counter.Count.
type Count struct {
	// N is how many CONNECTs the key's current window holds, this one
	// included: across every instance when Store is StoreRedis, this
	// instance's otherwise.
	N int
	// Over is N > Limit: the key is looping.
	Over bool
	// Store is StoreRedis or StoreMemory.
	Store string
}

// Counter counts CONNECTs per key: in Redis when it answers, in process
// memory when it does not. It always counts in memory too, so that in
// fallback mode each instance holds at least its own share of a key's
// window, and a key that looped through Redis is not given a fresh
// window by an outage; an answer from Redis is never below this
// instance's own count (a Redis that restarted empty forgot it).
//
// Fallback mode starts only on evidence that Redis itself is failing,
// judged as the handshake limiter and the session caps judge it
// (fallback.Health and fallback.Switch): a refused or reset connection
// or an error reply at once; timeouts only when
// RedisConfig.TimeoutsToFail counts in a row timed out and a PING bounded
// by ConfirmTimeout failed too. A count that failed short of that is
// answered from memory all the same. Counting has no fail-closed mode:
// a count nobody can make must not refuse a CONNECT.
//
// A Counter is safe for concurrent use. Create it with New and Close it
// when done.
type Counter struct {
	limit    int
	window   time.Duration
	redis    *RedisStore
	memory   *MemoryStore
	observer Observer
	logger   *slog.Logger

	// fallback is the Redis outage state: the mode, the retry pacing and
	// the background probe.
	fallback *fallback.Switch
}

// New returns a Counter configured by cfg.
func New(cfg Config) (*Counter, error) {
	switch {
	case cfg.Limit < 0:
		return nil, configErrorf("Config.Limit %d is negative", cfg.Limit)
	case cfg.Window < 0:
		return nil, configErrorf("Config.Window %v is negative", cfg.Window)
	case cfg.Window > 0 && cfg.Window < time.Millisecond:
		return nil, configErrorf("Config.Window %v is below 1ms", cfg.Window)
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
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.Memory == nil {
		m, err := NewMemoryStore(MemoryConfig{})
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
	c := &Counter{
		limit:    cfg.Limit,
		window:   cfg.Window,
		redis:    cfg.Redis,
		memory:   cfg.Memory,
		observer: cfg.Observer,
		logger:   cfg.Logger,
	}
	fcfg := fallback.Config{
		RetryInterval:  cfg.RetryInterval,
		ProbeInterval:  cfg.RetryInterval,
		ConfirmTimeout: cfg.ConfirmTimeout,
		Now:            cfg.Now,
		Ping:           func(context.Context) error { return nil },
		Name:           "reconnect",
		Mode:           "counting this instance's CONNECTs only",
		Logger:         cfg.Logger,
		Changed:        c.observer.Fallback,
		StoreError:     c.observer.StoreError,
	}
	if r := cfg.Redis; r != nil {
		fcfg.UseRedis(r.client, r.health, r.timeout)
	}
	c.fallback = fallback.New(fcfg)
	return c, nil
}

// Limit returns the most CONNECTs one key may complete per Window.
func (c *Counter) Limit() int { return c.limit }

// Window returns the length of a key's counting window.
func (c *Counter) Window() time.Duration { return c.window }

// Count counts one CONNECT of key (scope names what the key is, for the
// Observer) at now and reports the key's count. It returns an error only
// for an empty key or when ctx ended; Redis failures are answered from
// memory.
func (c *Counter) Count(ctx context.Context, scope, key string, now time.Time) (Count, error) {
	if key == "" {
		return Count{}, ErrEmptyKey
	}
	n := c.memory.CountAt(scope+":"+key, now, c.window)
	store := StoreMemory
	if c.redis != nil {
		var shared int
		out, err := c.fallback.Try(ctx, now, func() (err error) {
			shared, err = c.redis.Count(ctx, scope+":"+key, c.window)
			return err
		})
		if err != nil {
			return Count{}, err
		}
		if out == fallback.Answered {
			n, store = max(n, shared), StoreRedis
		}
	}
	c.observer.Counted(scope, store)
	return Count{N: n, Over: n > c.limit, Store: store}, nil
}

// InFallback reports whether the Counter is in fallback mode: Redis is
// configured but judged failing.
func (c *Counter) InFallback() bool { return c.fallback.Active() }

// Close stops the background probe and waits for it. Counts still work
// after Close, with no probe. Close is idempotent and returns nil.
func (c *Counter) Close() error {
	c.fallback.Close()
	return nil
}

// nopObserver is the Observer used when none is configured.
type nopObserver struct{}

func (nopObserver) Counted(string, string) {}
func (nopObserver) Banned(string)          {}
func (nopObserver) StoreError(error)       {}
func (nopObserver) Fallback(bool)          {}
