package handshake

import (
	"context"
	_ "embed" // for limitLua
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTimeout is the default RedisConfig.Timeout: a decision that takes
// longer is an error, and the Limiter answers from memory instead. A healthy
// Redis on the same network answers in well under a millisecond.
const DefaultTimeout = 50 * time.Millisecond

// DefaultPrefix is the default RedisConfig.Prefix.
const DefaultPrefix = "stompgate:"

//go:embed limit.lua
var limitLua string

// limitScript is the decision script, hashed once; Run sends EVALSHA and
// falls back to EVAL when the server answers NOSCRIPT.
var limitScript = redis.NewScript(limitLua)

// RedisConfig configures a RedisStore. Client is required.
type RedisConfig struct {
	// Client is the connection to Redis: a single node, Sentinel or
	// Cluster client (NewUniversalClient builds one from a URL). Its
	// options must have ContextTimeoutEnabled set, or a hung server would
	// hold each decision for the client's ReadTimeout instead of Timeout;
	// NewUniversalClient sets it.
	Client redis.UniversalClient
	// Timeout bounds each decision and each ban, from sending the script
	// to reading its answer. Zero means DefaultTimeout; negative is an
	// error.
	Timeout time.Duration
	// Prefix starts every key the store writes. Empty means DefaultPrefix.
	// It must not contain '{' or '}', which would change the hash tag.
	Prefix string
}

// RedisStore is the limit_req algorithm (see the package documentation) run
// in Redis by one Lua script per decision: the ban check, the read, the
// decision and the write are one atomic step and one round trip, timed by
// Redis' own clock, so every server instance sharing the Redis shares the
// limit without races or clock skew.
//
// A RedisStore is safe for concurrent use. It holds no connection of its
// own; closing Client is the caller's business.
type RedisStore struct {
	client  redis.UniversalClient
	timeout time.Duration
	prefix  string

	// nowMs, when set, replaces Redis TIME as the clock. Tests only: it
	// lets a timeline of requests be replayed at chosen milliseconds.
	nowMs func() int64
}

// NewRedisStore returns a RedisStore configured by cfg. It does not contact
// Redis.
func NewRedisStore(cfg RedisConfig) (*RedisStore, error) {
	if cfg.Client == nil {
		return nil, configErrorf("RedisConfig.Client is nil")
	}
	if !contextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold handshakes past Timeout")
	}
	if cfg.Timeout < 0 {
		return nil, configErrorf("RedisConfig.Timeout %v is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, configErrorf("RedisConfig.Prefix %q contains a brace", cfg.Prefix)
	}
	return &RedisStore{client: cfg.Client, timeout: cfg.Timeout, prefix: cfg.Prefix}, nil
}

// contextTimeoutEnabled reports whether c honours context deadlines on
// socket reads and writes. Clients of unknown types are trusted.
func contextTimeoutEnabled(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	default:
		return true
	}
}

// Allow decides one request for key under l in Redis. The call is bounded
// by Timeout; on any Redis error it returns the error and no decision.
func (s *RedisStore) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	keys := []string{s.bucketKey(key, l.Name), s.banKey(key)}
	var vals []int64
	var err error
	if s.nowMs != nil {
		vals, err = limitScript.Run(ctx, s.client, keys, l.Rate, l.Burst, s.nowMs()).Int64Slice()
	} else {
		vals, err = limitScript.Run(ctx, s.client, keys, l.Rate, l.Burst).Int64Slice()
	}
	if err != nil {
		s.followCluster()
		return Result{}, fmt.Errorf("handshake: redis decision: %w", err)
	}
	if len(vals) != 4 {
		return Result{}, fmt.Errorf("handshake: redis decision: script returned %d values, want 4", len(vals))
	}
	return Result{
		Allowed:    vals[0] == 1,
		RetryAfter: time.Duration(vals[1]) * time.Millisecond,
		Excess:     vals[2],
		Store:      StoreRedis,
		Banned:     vals[3] == 1,
	}, nil
}

// Ban bans key for d (PX), in every zone and for every instance sharing the
// Redis; d of zero or less lifts the ban. d is rounded up to whole
// milliseconds.
func (s *RedisStore) Ban(ctx context.Context, key string, d time.Duration) error {
	if key == "" {
		return ErrEmptyKey
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var err error
	if ms := banMs(d); ms > 0 {
		err = s.client.Set(ctx, s.banKey(key), "1", time.Duration(ms)*time.Millisecond).Err()
	} else {
		err = s.client.Del(ctx, s.banKey(key)).Err()
	}
	if err != nil {
		s.followCluster()
		return fmt.Errorf("handshake: redis ban: %w", err)
	}
	return nil
}

// Banned reports whether key is banned and for how much longer (PTTL of
// the ban key the decision script checks), in one round trip bounded by
// Timeout. It counts no request. A ban key without an expiry, which Ban
// never writes, is not a ban, as in the script.
func (s *RedisStore) Banned(ctx context.Context, key string) (time.Duration, bool, error) {
	if key == "" {
		return 0, false, ErrEmptyKey
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// PTTL answers -2 for a missing key and -1 for one without expiry;
	// go-redis passes both through unscaled.
	d, err := s.client.PTTL(ctx, s.banKey(key)).Result()
	if err != nil {
		s.followCluster()
		return 0, false, fmt.Errorf("handshake: redis ban check: %w", err)
	}
	if d <= 0 {
		return 0, false, nil
	}
	return d, true, nil
}

// followCluster schedules a reload of a Cluster client's slot map after a
// failed call. A connection that stops answering (a paused or partitioned
// master) is already bounded by Timeout and dropped from the pool when it
// times out (ContextTimeoutEnabled), but go-redis learns that a replica
// took over only from a MOVED answer or its periodic reload (60 s by
// default), and a silent master sends no MOVED: without this the store
// would fail for up to a minute after the failover completed. go-redis
// runs one reload at a time, at most one per 200 ms, however many calls
// fail.
func (s *RedisStore) followCluster() {
	if cc, ok := s.client.(*redis.ClusterClient); ok {
		cc.ReloadState(context.Background())
	}
}

// bucketKey is the hash holding zone's state for key. The hash tag {key}
// is shared with banKey so both are in one Cluster slot.
func (s *RedisStore) bucketKey(key, zone string) string {
	return s.prefix + "hs:{" + key + "}:" + zone
}

// banKey is the string whose existence bans key.
func (s *RedisStore) banKey(key string) string {
	return s.prefix + "ban:{" + key + "}"
}
