package sessioncap

import (
	"context"
	_ "embed" // for the scripts
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/internal/randid"
)

// Defaults of RedisConfig.
const (
	// DefaultLeaseTTL is how long a lease lives without renewal, and so
	// the longest a crashed instance's sessions keep their slots. Their
	// users reconnect to another instance within seconds and find their
	// dead sessions still counted for at most this long; with
	// Retry-After 2 s that is a few retries. Renewal, every 5 s, costs
	// one small script per key with sessions on the instance, and a Redis
	// outage or failover shorter than the 10 s left after a missed
	// renewal loses no lease.
	DefaultLeaseTTL = 15 * time.Second
	// DefaultTimeout bounds one acquire or release: a healthy Redis on the
	// same network answers in well under a millisecond, and the handshake
	// limiter uses the same bound.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPrefix starts every key.
	DefaultPrefix = "stompgate:"
	// minLeaseTTL keeps renewal (every TTL/3) from becoming a busy loop.
	minLeaseTTL = 30 * time.Millisecond
)

var (
	//go:embed acquire.lua
	acquireLua string
	//go:embed renew.lua
	renewLua string

	// The scripts are hashed once; Run sends EVALSHA and falls back to
	// EVAL when the server answers NOSCRIPT.
	acquireScript = redis.NewScript(acquireLua)
	renewScript   = redis.NewScript(renewLua)
)

// RedisObserver is told what the RedisStore's renewer does, for metrics.
// Its methods are called on the renewer's goroutine and must be fast.
type RedisObserver interface {
	// StoreError reports a failed Redis call.
	StoreError(err error)
	// LeasesRestored reports leases that renewal found missing and wrote
	// back.
	LeasesRestored(n int)
}

// RedisConfig configures a RedisStore. Client is required.
type RedisConfig struct {
	// Client is the connection to Redis: a single node, Sentinel or
	// Cluster client (internal/redisclient builds one from a
	// URL). Its options must have ContextTimeoutEnabled set, or a hung
	// server would hold each acquire for the client's ReadTimeout instead
	// of Timeout.
	Client redis.UniversalClient
	// LeaseTTL is how long a lease lives unless renewed; renewal runs every
	// LeaseTTL/3. It bounds how long a crashed instance's sessions keep
	// their slots. Zero means DefaultLeaseTTL; below 30ms is an error.
	LeaseTTL time.Duration
	// Timeout bounds each acquire and release. Zero means DefaultTimeout;
	// negative is an error. A renewal pipeline is bounded by LeaseTTL/3.
	// An acquire that times out is not by itself a sign that Redis is
	// failing (see Limiter).
	Timeout time.Duration
	// TimeoutsToFail is how many acquires and releases in a row must time
	// out before Redis is suspected (see Limiter: fallback mode starts
	// only if a PING within Config.ConfirmTimeout then fails too). One
	// that fails otherwise (refused or reset connection, error reply)
	// counts at once. Zero means fallback.DefaultTimeoutsToFail (3);
	// negative is an error.
	TimeoutsToFail int
	// Prefix starts every key. Empty means DefaultPrefix. It must not
	// contain '{' or '}', which would change the hash tag.
	Prefix string
	// Observer, if not nil, is told about renewal errors and restored
	// leases.
	Observer RedisObserver
	// Logger receives a Warn when renewal starts failing and an Info when
	// it works again. Nil means slog.Default().
	Logger *slog.Logger
}

// RedisStore holds session leases in Redis, shared by every instance (see
// the package documentation for the model), and renews the leases this
// instance holds on a goroutine of its own until Close.
//
// A RedisStore is safe for concurrent use. It does not close Client.
type RedisStore struct {
	client   redis.UniversalClient
	ttl      time.Duration
	timeout  time.Duration
	prefix   string
	observer RedisObserver
	logger   *slog.Logger
	// health judges from acquires and releases whether Redis is failing.
	health *fallback.Health

	// instance prefixes lease ids: random, so two instances (or two runs
	// of one) never share an id.
	instance string
	next     atomic.Uint64

	mu sync.Mutex
	// live holds the leases this instance holds, by key, for renewal.
	// Guarded by mu.
	live map[string]map[string]struct{}
	// failing is set while renewal fails, so the Warn is logged once.
	// Guarded by mu.
	failing bool

	stop      chan struct{}
	stopOnce  sync.Once
	renewDone chan struct{}
}

// NewRedisStore returns a RedisStore configured by cfg and starts its
// renewer. It does not contact Redis.
func NewRedisStore(cfg RedisConfig) (*RedisStore, error) {
	if cfg.Client == nil {
		return nil, configErrorf("RedisConfig.Client is nil")
	}
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold new sessions past Timeout")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < minLeaseTTL {
		return nil, configErrorf("RedisConfig.LeaseTTL %v is below %v", cfg.LeaseTTL, minLeaseTTL)
	}
	if cfg.Timeout < 0 {
		return nil, configErrorf("RedisConfig.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.TimeoutsToFail < 0 {
		return nil, configErrorf("RedisConfig.TimeoutsToFail %d is negative", cfg.TimeoutsToFail)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, configErrorf("RedisConfig.Prefix %q contains a brace", cfg.Prefix)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &RedisStore{
		client:    cfg.Client,
		ttl:       cfg.LeaseTTL,
		timeout:   cfg.Timeout,
		prefix:    cfg.Prefix,
		observer:  cfg.Observer,
		logger:    cfg.Logger,
		health:    fallback.NewHealth(cfg.Timeout, cfg.TimeoutsToFail),
		instance:  randid.New(8),
		live:      make(map[string]map[string]struct{}),
		stop:      make(chan struct{}),
		renewDone: make(chan struct{}),
	}
	cfg.Client.AddHook(s.health.DialHook())
	go s.renewLoop()
	return s, nil
}

// Acquire takes a slot of key for a new lease if key holds fewer than max
// live leases. It returns the lease id (empty when refused) and how many
// leases key held before. The call is bounded by Timeout; on any Redis
// error it returns the error and no decision.
func (s *RedisStore) Acquire(ctx context.Context, key string, max int) (id string, held int, ok bool, err error) {
	id, held, ok, _, err = s.AcquireFor(ctx, key, max, "", false)
	return id, held, ok, err
}

// AcquireFor is Acquire for a lease that names its owner (a session id,
// which must not contain '|'), so that another instance can tell whose
// lease it displaced. With displace, a key at max does not refuse: its
// oldest leases, by the Redis time they were taken, are dropped to make
// room, and displaced holds their ids (see LeaseOwner); each owner should
// then be ended, wherever it runs.
func (s *RedisStore) AcquireFor(ctx context.Context, key string, max int, owner string, displace bool) (id string, held int, ok bool, displaced []string, err error) {
	if key == "" {
		return "", 0, false, nil, ErrEmptyKey
	}
	if max < 1 {
		return "", 0, false, nil, ErrInvalidMax
	}
	self := s.instance + ":" + strconv.FormatUint(s.next.Add(1), 36) + "|" + owner
	flag := "0"
	if displace {
		flag = "1"
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := time.Now()
	vals, err := acquireScript.Run(ctx, s.client, []string{s.setKey(key)}, max, s.ttl.Milliseconds(), self, flag).Slice()
	s.health.RoundTrip(parent, time.Since(sent), err)
	if err != nil {
		fallback.FollowCluster(s.client)
		return "", 0, false, nil, fmt.Errorf("sessioncap: redis acquire: %w", err)
	}
	if len(vals) < 2 {
		return "", 0, false, nil, fmt.Errorf("sessioncap: redis acquire: script returned %d values, want 2 or more", len(vals))
	}
	acquired, _ := vals[0].(int64)
	n, _ := vals[1].(int64)
	if acquired != 1 {
		return "", int(n), false, nil, nil
	}
	if len(vals) < 3 {
		return "", 0, false, nil, fmt.Errorf("sessioncap: redis acquire: script returned no lease id")
	}
	id, _ = vals[2].(string)
	for _, v := range vals[3:] {
		if m, ok := v.(string); ok {
			displaced = append(displaced, m)
		}
	}
	s.mu.Lock()
	ids := s.live[key]
	if ids == nil {
		ids = make(map[string]struct{})
		s.live[key] = ids
	}
	ids[id] = struct{}{}
	s.mu.Unlock()
	return id, int(n), true, displaced, nil
}

// LeaseOwner returns the owner AcquireFor recorded in lease id, empty
// when there is none.
func LeaseOwner(id string) string {
	if i := strings.LastIndexByte(id, '|'); i >= 0 && strings.Count(id, "|") >= 2 {
		return id[i+1:]
	}
	return ""
}

// Release gives back the lease id of key. The lease stops being renewed
// at once; if the ZREM fails, the slot comes back when the lease expires,
// within LeaseTTL.
func (s *RedisStore) Release(ctx context.Context, key, id string) error {
	s.mu.Lock()
	if ids := s.live[key]; ids != nil {
		delete(ids, id)
		if len(ids) == 0 {
			delete(s.live, key)
		}
	}
	s.mu.Unlock()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := time.Now()
	err := s.client.ZRem(ctx, s.setKey(key), id).Err()
	s.health.RoundTrip(parent, time.Since(sent), err)
	if err != nil {
		fallback.FollowCluster(s.client)
		return fmt.Errorf("sessioncap: redis release: %w", err)
	}
	return nil
}

// Held returns how many live leases key holds in Redis, across every
// instance, counting expired ones that no acquire has dropped yet as
// gone.
func (s *RedisStore) Held(ctx context.Context, key string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	t, err := s.client.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("sessioncap: redis count: %w", err)
	}
	n, err := s.client.ZCount(ctx, s.setKey(key), "("+strconv.FormatInt(t.UnixMilli(), 10), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("sessioncap: redis count: %w", err)
	}
	return int(n), nil
}

// Ping reports whether Redis answers, bounded by Timeout.
func (s *RedisStore) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.client.Ping(ctx).Err()
}

// Close stops the renewer and waits for it. The leases this instance
// still holds are left to expire within LeaseTTL; sessions should be
// closed (and their leases released) before. Close is idempotent and
// always returns nil.
func (s *RedisStore) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.renewDone
	return nil
}

// renewLoop renews every LeaseTTL/3 until Close.
func (s *RedisStore) renewLoop() {
	defer close(s.renewDone)
	t := time.NewTicker(s.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.renew()
	}
}

// renew extends every lease this instance holds: one script per key,
// all in one pipeline (split per node on a Cluster), bounded by the
// renewal interval.
func (s *RedisStore) renew() {
	s.mu.Lock()
	keys := make([]string, 0, len(s.live))
	args := make([][]any, 0, len(s.live))
	for key, ids := range s.live {
		a := make([]any, 0, len(ids)+1)
		a = append(a, s.ttl.Milliseconds())
		for id := range ids {
			a = append(a, id)
		}
		keys = append(keys, key)
		args = append(args, a)
	}
	s.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.ttl/3)
	defer cancel()
	restored, err := s.renewPipeline(ctx, keys, args, false)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// Redis lost its script cache (a restart): EVAL loads it again.
		restored, err = s.renewPipeline(ctx, keys, args, true)
	}
	if restored > 0 {
		s.observer.LeasesRestored(restored)
	}
	s.forgetReleased(ctx, keys, args)
	s.mu.Lock()
	was := s.failing
	s.failing = err != nil
	s.mu.Unlock()
	switch {
	case err != nil:
		fallback.FollowCluster(s.client)
		s.observer.StoreError(err)
		if !was {
			s.logger.Warn("sessioncap: renewing session leases failed; they expire after the lease TTL unless a later renewal succeeds",
				"err", err, "lease_ttl", s.ttl)
		}
	case was:
		s.logger.Info("sessioncap: renewing session leases works again")
	}
}

// forgetReleased removes again the leases of the snapshot (keys, args)
// that were released while the renewal ran: the renewal may have written
// back what their ZREM had removed. Release takes a lease out of live
// before its ZREM, so every such lease is found here.
func (s *RedisStore) forgetReleased(ctx context.Context, keys []string, args [][]any) {
	type lease struct{ key, id string }
	var gone []lease
	s.mu.Lock()
	for i, key := range keys {
		for _, id := range args[i][1:] {
			if _, ok := s.live[key][id.(string)]; !ok {
				gone = append(gone, lease{key, id.(string)})
			}
		}
	}
	s.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for _, l := range gone {
		pipe.ZRem(ctx, s.setKey(l.key), l.id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.observer.StoreError(fmt.Errorf("sessioncap: redis release after renew: %w", err))
	}
}

// renewPipeline sends one renew script per key, by EVALSHA or, with eval
// set, EVAL. It returns the leases written back and the first error.
func (s *RedisStore) renewPipeline(ctx context.Context, keys []string, args [][]any, eval bool) (int, error) {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.Cmd, len(keys))
	for i, key := range keys {
		k := []string{s.setKey(key)}
		if eval {
			cmds[i] = renewScript.Eval(ctx, pipe, k, args[i]...)
		} else {
			cmds[i] = renewScript.EvalSha(ctx, pipe, k, args[i]...)
		}
	}
	_, _ = pipe.Exec(ctx)
	restored := 0
	var first error
	for _, c := range cmds {
		n, err := c.Int()
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		restored += n
	}
	if first != nil {
		return restored, fmt.Errorf("sessioncap: redis renew: %w", first)
	}
	return restored, nil
}

// setKey is the sorted set of key's leases, wholly inside a hash tag.
func (s *RedisStore) setKey(key string) string {
	return s.prefix + "cap:{" + key + "}"
}
