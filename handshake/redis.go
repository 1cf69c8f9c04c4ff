package handshake

import (
	"context"
	_ "embed" // for limitLua
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/fallback"
)

// DefaultTimeout is the default RedisConfig.Timeout: a round trip that
// takes longer is an error (and, TimeoutsToFail in a row, a reason to
// ask whether Redis is failing). A healthy Redis on the same network answers in well
// under a millisecond.
const DefaultTimeout = 50 * time.Millisecond

// DefaultTimeoutsToFail is the default RedisConfig.TimeoutsToFail: one
// timeout may be this server's CPU (see fallback.DefaultTimeoutsToFail).
const DefaultTimeoutsToFail = fallback.DefaultTimeoutsToFail

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
	// Cluster client (internal/redisclient builds one from a URL). Its
	// options must have ContextTimeoutEnabled set, or a hung server would
	// hold each decision for the client's ReadTimeout instead of Timeout;
	// redisclient.New sets it. NewRedisStore adds a hook to it that
	// watches dials (on a Cluster client, whose nodes dial, it sees none:
	// there a refused connection counts as a timeout).
	Client redis.UniversalClient
	// Timeout bounds each round trip to Redis (a pipeline of decisions, a
	// ban, a ban check), from writing its command to reading its answer:
	// it measures Redis, not how long a decision waited to be sent (see
	// MaxQueueWait). Zero means DefaultTimeout; negative is an error.
	Timeout time.Duration
	// TimeoutsToFail is how many round trips in a row must time out
	// before Redis is suspected (see Limiter: fallback mode starts only
	// if a PING within Config.ConfirmTimeout then fails too). A round
	// trip that fails otherwise (refused or reset connection, error
	// reply) counts at once. Zero means DefaultTimeoutsToFail; negative
	// is an error.
	TimeoutsToFail int
	// Prefix starts every key the store writes. Empty means DefaultPrefix.
	// It must not contain '{' or '}', which would change the hash tag.
	Prefix string
	// MaxBatch is the most decisions sent to Redis in one pipeline.
	// Concurrent decisions are queued and sent together, one round trip
	// for many handshakes (see RedisStore). Zero means DefaultMaxBatch;
	// negative turns coalescing off: every decision is its own EVALSHA
	// round trip, as Allow did before pipelining.
	MaxBatch int
	// MaxQueue is the most decisions waiting for a pipeline. A decision
	// that finds the queue full fails at once with ErrQueueFull;
	// PipelineStats counts it. It is the server's own backlog, not a
	// Redis failure: the Limiter decides it in memory without entering
	// fallback mode. Zero means DefaultMaxQueue; negative is an error.
	MaxQueue int
	// MaxQueueWait bounds how long a decision waits in the queue for its
	// pipeline to be written; one that waited longer is not sent and
	// fails with ErrQueueWait, which, like ErrQueueFull, is not a Redis
	// failure. A caller thus waits at most MaxQueueWait + Timeout. Zero
	// means DefaultMaxQueueWait; negative is an error.
	MaxQueueWait time.Duration
	// MaxPipelines is the most pipelines in flight at once, each sent by
	// its own goroutine. Zero means DefaultMaxPipelines; negative is an
	// error.
	MaxPipelines int
}

// RedisStore is the limit_req algorithm (see the package documentation) run
// in Redis by one Lua script per decision: the ban check, the read, the
// decision and the write are one atomic step and one round trip, timed by
// Redis' own clock, so every server instance sharing the Redis shares the
// limit without races or clock skew.
//
// Concurrent decisions are coalesced: each caller queues its decision and
// waits; one goroutine sends the queued decisions as one pipeline of
// EVALSHA calls (on a Cluster client, one pipeline per node owning their
// slots) and hands each caller its own result. The script runs once per
// decision, so the atomicity and the answers are those of one call at a
// time; only the round trips are shared. Each caller still waits at most
// Timeout (or until its context ends), a failed pipeline fails only the
// decisions it carried, and at most MaxQueue decisions wait. The goroutine
// runs only while decisions are queued.
//
// A RedisStore is safe for concurrent use. It holds no connection of its
// own; closing Client is the caller's business. Close waits for the
// pipeline's goroutine; a store that is never closed leaves none behind
// once its decisions are answered.
type RedisStore struct {
	client    redis.UniversalClient
	timeout   time.Duration
	queueWait time.Duration
	prefix    string
	// health judges from the round trips whether Redis is failing.
	health *fallback.Health
	// pipe coalesces decisions; nil when MaxBatch is negative.
	pipe *pipeline

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
	if !fallback.ContextTimeoutEnabled(cfg.Client) {
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
	if cfg.MaxQueue < 0 {
		return nil, configErrorf("RedisConfig.MaxQueue %d is negative", cfg.MaxQueue)
	}
	if cfg.MaxPipelines < 0 {
		return nil, configErrorf("RedisConfig.MaxPipelines %d is negative", cfg.MaxPipelines)
	}
	if cfg.MaxPipelines == 0 {
		cfg.MaxPipelines = DefaultMaxPipelines
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.MaxQueueWait < 0 {
		return nil, configErrorf("RedisConfig.MaxQueueWait %v is negative", cfg.MaxQueueWait)
	}
	if cfg.MaxQueueWait == 0 {
		cfg.MaxQueueWait = DefaultMaxQueueWait
	}
	if cfg.TimeoutsToFail < 0 {
		return nil, configErrorf("RedisConfig.TimeoutsToFail %d is negative", cfg.TimeoutsToFail)
	}
	if cfg.TimeoutsToFail == 0 {
		cfg.TimeoutsToFail = DefaultTimeoutsToFail
	}
	s := &RedisStore{client: cfg.Client, timeout: cfg.Timeout, queueWait: cfg.MaxQueueWait, prefix: cfg.Prefix}
	s.health = fallback.NewHealth(cfg.Timeout, cfg.TimeoutsToFail)
	cfg.Client.AddHook(s.health.DialHook())
	if cfg.MaxBatch > 0 {
		s.pipe = newPipeline(s, cfg.MaxBatch, cfg.MaxQueue, cfg.MaxPipelines)
	}
	return s, nil
}

// Close waits until every queued decision is answered and the pipeline's
// goroutine has returned. The store still decides after Close, each
// decision in a round trip of its own. Close is idempotent and always
// returns nil; it does not close Client.
func (s *RedisStore) Close() error {
	if s.pipe != nil {
		s.pipe.close()
	}
	return nil
}

// PipelineStats reports what the pipeline has done so far; all zero when
// coalescing is off (RedisConfig.MaxBatch negative).
func (s *RedisStore) PipelineStats() PipelineStats {
	if s.pipe == nil {
		return PipelineStats{}
	}
	return s.pipe.stats()
}

// Allow decides one request for key under l in Redis. Its round trip is
// bounded by Timeout (and, with coalescing on, its wait to be sent by
// MaxQueueWait); on any Redis error it returns the error and no decision,
// as it does when ctx ends first. With coalescing on it fails with
// ErrQueueFull (wrapped) when MaxQueue decisions are already waiting, and
// with ErrQueueWait when it waited MaxQueueWait without being sent.
func (s *RedisStore) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := l.Validate(); err != nil {
		return Result{}, err
	}
	if s.pipe != nil {
		r, err := s.pipe.allow(ctx, key, l)
		if err != errPipelineClosed {
			if err != nil {
				return Result{}, fmt.Errorf("handshake: redis decision: %w", err)
			}
			return r, nil
		}
	}
	return s.allowAlone(ctx, key, l)
}

// allowAlone is Allow in a round trip of its own.
func (s *RedisStore) allowAlone(parent context.Context, key string, l Limit) (Result, error) {
	ctx, cancel := context.WithTimeout(parent, s.timeout)
	defer cancel()
	sent := time.Now()

	keys := []string{s.bucketKey(key, l.Name), s.banKey(key)}
	var cmd *redis.Cmd
	if s.nowMs != nil {
		cmd = limitScript.Run(ctx, s.client, keys, l.Rate, l.Burst, s.nowMs())
	} else {
		cmd = limitScript.Run(ctx, s.client, keys, l.Rate, l.Burst)
	}
	r, err := decisionOf(cmd)
	s.health.RoundTrip(parent, time.Since(sent), cmd.Err())
	if err != nil {
		s.followCluster()
		return Result{}, fmt.Errorf("handshake: redis decision: %w", err)
	}
	return r, nil
}

// decisionOf reads the answer of a script of one decision.
func decisionOf(cmd *redis.Cmd) (Result, error) {
	v, err := cmd.Result()
	if err != nil {
		return Result{}, err
	}
	vals, ok := v.([]any)
	if !ok || len(vals) != 4 {
		return Result{}, fmt.Errorf("script returned %v, want 4 integers", v)
	}
	return decision(vals)
}

// Ban bans key for d (PX), in every zone and for every instance sharing the
// Redis; d of zero or less lifts the ban. d is rounded up to whole
// milliseconds.
func (s *RedisStore) Ban(ctx context.Context, key string, d time.Duration) error {
	if key == "" {
		return ErrEmptyKey
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := time.Now()
	var err error
	if ms := banMs(d); ms > 0 {
		err = s.client.Set(ctx, s.banKey(key), "1", time.Duration(ms)*time.Millisecond).Err()
	} else {
		err = s.client.Del(ctx, s.banKey(key)).Err()
	}
	s.health.RoundTrip(parent, time.Since(sent), err)
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
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	sent := time.Now()
	// PTTL answers -2 for a missing key and -1 for one without expiry;
	// go-redis passes both through unscaled.
	d, err := s.client.PTTL(ctx, s.banKey(key)).Result()
	s.health.RoundTrip(parent, time.Since(sent), err)
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
// failed call (see fallback.FollowCluster).
func (s *RedisStore) followCluster() { fallback.FollowCluster(s.client) }

// bucketKey is the hash holding zone's state for key. The hash tag {key}
// is shared with banKey so both are in one Cluster slot.
func (s *RedisStore) bucketKey(key, zone string) string {
	return s.prefix + "hs:{" + key + "}:" + zone
}

// banKey is the string whose existence bans key.
func (s *RedisStore) banKey(key string) string {
	return s.prefix + "ban:{" + key + "}"
}
