package reconnect

import (
	"context"
	_ "embed" // for the script
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/fallback"
)

// Defaults of RedisConfig.
const (
	// DefaultTimeout bounds one count: a healthy Redis on the same
	// network answers in well under a millisecond, and the handshake
	// limiter and the session caps use the same bound. A count is made
	// on the session's reader goroutine before CONNECTED is sent.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPrefix starts every key, as the other stores' keys do.
	DefaultPrefix = "stompgate:"
)

var (
	//go:embed count.lua
	countLua string

	// countScript is hashed once; Run sends EVALSHA and falls back to
	// EVAL when the server answers NOSCRIPT.
	countScript = redis.NewScript(countLua)
)

// RedisConfig configures a RedisStore. Client is required.
type RedisConfig struct {
	// Client is the connection to Redis: a single node, Sentinel or
	// Cluster client (internal/redisclient builds one from a URL). Its
	// options must have ContextTimeoutEnabled set, or a hung server would
	// hold each count for the client's ReadTimeout instead of Timeout.
	Client redis.UniversalClient
	// Timeout bounds each count. Zero means DefaultTimeout; negative is
	// an error. A count that times out is not by itself a sign that
	// Redis is failing (see Counter).
	Timeout time.Duration
	// TimeoutsToFail is how many counts in a row must time out before
	// Redis is suspected (fallback.Health); one that fails otherwise
	// counts at once. Zero means fallback.DefaultTimeoutsToFail (3);
	// negative is an error.
	TimeoutsToFail int
	// Prefix starts every key. Empty means DefaultPrefix. It must not
	// contain '{' or '}', which would change the hash tag.
	Prefix string
}

// RedisStore counts CONNECTs per key in Redis, shared by every instance:
// one script call per count, timed by Redis' own clock (see the package
// documentation). It holds no state of its own besides the judgement of
// Redis' health.
//
// A RedisStore is safe for concurrent use. It does not close Client.
type RedisStore struct {
	client  redis.UniversalClient
	timeout time.Duration
	prefix  string
	// health judges from the counts whether Redis is failing.
	health *fallback.Health
}

// NewRedisStore returns a RedisStore configured by cfg. It does not
// contact Redis.
func NewRedisStore(cfg RedisConfig) (*RedisStore, error) {
	if cfg.Client == nil {
		return nil, configErrorf("RedisConfig.Client is nil")
	}
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold CONNECTs past Timeout")
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
	s := &RedisStore{
		client:  cfg.Client,
		timeout: cfg.Timeout,
		prefix:  cfg.Prefix,
		health:  fallback.NewHealth(cfg.Timeout, cfg.TimeoutsToFail),
	}
	cfg.Client.AddHook(s.health.DialHook())
	return s, nil
}

// Count counts one CONNECT of key in windows of length d, by Redis'
// clock, and returns how many the key's current window holds across
// every instance, this one included. The call is bounded by Timeout; on
// any Redis error it returns the error and no count.
func (s *RedisStore) Count(ctx context.Context, key string, d time.Duration) (int, error) {
	return s.count(ctx, key, d, nil)
}

// count is Count; nowMs, if not nil, replaces Redis TIME (tests only).
func (s *RedisStore) count(ctx context.Context, key string, d time.Duration, nowMs *int64) (int, error) {
	if key == "" {
		return 0, ErrEmptyKey
	}
	ms := max(d.Milliseconds(), 1)
	args := []any{ms}
	if nowMs != nil {
		args = append(args, strconv.FormatInt(*nowMs, 10))
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := time.Now()
	vals, err := countScript.Run(ctx, s.client, []string{s.windowKey(key)}, args...).Int64Slice()
	s.health.RoundTrip(parent, time.Since(sent), err)
	if err != nil {
		fallback.FollowCluster(s.client)
		return 0, fmt.Errorf("reconnect: redis count: %w", err)
	}
	if len(vals) != 2 {
		return 0, fmt.Errorf("reconnect: redis count: script returned %d values, want 2", len(vals))
	}
	return int(vals[0]), nil
}

// windowKey is the hash holding key's window, wholly inside a hash tag
// so that it works on Redis Cluster.
func (s *RedisStore) windowKey(key string) string {
	return s.prefix + "rc:{" + key + "}"
}
