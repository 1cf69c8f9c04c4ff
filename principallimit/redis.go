package principallimit

import (
	"context"
	_ "embed" // for the script
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/fallback"
)

// Defaults of RedisConfig.
const (
	// DefaultTimeout bounds one charge: a healthy Redis on the same
	// network answers in well under a millisecond, and the handshake
	// limiter and the session caps use the same bound. The frame that
	// makes the call waits for it, so it must stay short.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPrefix starts every key.
	DefaultPrefix = "stompgate:"
)

var (
	//go:embed charge.lua
	chargeLua string
	// chargeScript is hashed once; Run sends EVALSHA and falls back to
	// EVAL when the server answers NOSCRIPT.
	chargeScript = redis.NewScript(chargeLua)
)

// RedisConfig configures a RedisStore. Client is required.
type RedisConfig struct {
	// Client is the connection to Redis: a single node, Sentinel or
	// Cluster client (internal/redisclient builds one from a URL). Its
	// options must have ContextTimeoutEnabled set, or a hung server would
	// hold a frame for the client's ReadTimeout instead of Timeout.
	Client redis.UniversalClient
	// Timeout bounds each charge. Zero means DefaultTimeout; negative is
	// an error.
	Timeout time.Duration
	// TimeoutsToFail is how many charges in a row must time out before
	// Redis is suspected (fallback mode then starts only if a PING within
	// Config.ConfirmTimeout fails too). A charge that fails otherwise
	// (refused or reset connection, error reply) counts at once. Zero
	// means fallback.DefaultTimeoutsToFail (3); negative is an error.
	TimeoutsToFail int
	// Prefix starts every key. Empty means DefaultPrefix. It must not
	// contain '{' or '}', which would change the hash tag.
	Prefix string
}

// RedisStore keeps each principal's count per window in Redis, shared by
// every instance: one hash per principal and rule,
//
//	<prefix>pl:{<principal>}:<rule>
//
// with the window's index by Redis TIME and the count in it, living as
// long as the window (and a second more). Every charge is one atomic
// script on that one key, so it works on Redis Cluster.
//
// A RedisStore is safe for concurrent use. It does not close Client.
type RedisStore struct {
	client  redis.UniversalClient
	timeout time.Duration
	prefix  string
	// health judges from the charges whether Redis is failing.
	health *fallback.Health
	// nowMs, when not zero, is passed to the script as the time: a test
	// hook, so that windows follow a test's clock instead of Redis TIME.
	nowMs func() int64
}

// NewRedisStore returns a RedisStore configured by cfg. It does not
// contact Redis.
func NewRedisStore(cfg RedisConfig) (*RedisStore, error) {
	if cfg.Client == nil {
		return nil, configErrorf("RedisConfig.Client is nil")
	}
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
		return nil, configErrorf("RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold frames past Timeout")
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

// Charge is what Redis answered to one charge.
type Charge struct {
	// Allowed is true when the frames asking fit within the limit and
	// were counted.
	Allowed bool
	// Count is the principal's count in the window after the charge, on
	// every instance together.
	Count int
	// Left is what remains of the window by Redis' clock.
	Left time.Duration
}

// Charge adds to principal's count under rule, in the window Redis' clock
// is in: optimistic frames always (they were passed already), asking
// frames only if the count stays within limit after them. The call is
// bounded by Timeout; on any Redis error it returns the error and no
// answer.
func (s *RedisStore) Charge(ctx context.Context, principal, rule string, optimistic, asking, limit int, window time.Duration) (Charge, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := []any{optimistic, asking, limit, max(window.Milliseconds(), 1)}
	if s.nowMs != nil {
		args = append(args, s.nowMs())
	}
	sent := time.Now()
	vals, err := chargeScript.Run(ctx, s.client, []string{s.key(principal, rule)}, args...).Int64Slice()
	s.health.RoundTrip(parent, time.Since(sent), err)
	if err != nil {
		fallback.FollowCluster(s.client)
		return Charge{}, fmt.Errorf("principallimit: redis charge: %w", err)
	}
	if len(vals) != 3 {
		return Charge{}, fmt.Errorf("principallimit: redis charge: script returned %d values, want 3", len(vals))
	}
	return Charge{Allowed: vals[0] == 1, Count: int(vals[1]), Left: time.Duration(vals[2]) * time.Millisecond}, nil
}

// key is the hash of principal's count under rule; the hash tag is the
// principal, so that every rule of one principal is on one Cluster slot.
func (s *RedisStore) key(principal, rule string) string {
	return s.prefix + "pl:{" + principal + "}:" + rule
}
