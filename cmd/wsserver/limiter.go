package main

import (
	"flag"
	"time"

	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/internal/fallback"
	"github.com/stompgate/stompgate/sessioncap"
)

// How the handshake limiter and the session caps tell Redis failing from
// this server being busy, and how the limiter sheds one address's flood
// before it queues for Redis.

// limiterSettings are the settings limiterFlags registers.
type limiterSettings struct {
	redisQueueWait      time.Duration
	redisTimeoutsToFail int
	redisConfirmTimeout time.Duration
	limiterShedKeys     int
	limiterInFlight     int
}

// limiterFlags registers the settings of the handshake limiter's queue,
// its judgement of Redis and its shedding.
func (s *settings) limiterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.redisQueueWait, "redis-queue-wait", handshake.DefaultMaxQueueWait, "bound on the time a handshake decision waits to be sent to Redis; one that waited longer is decided in process memory (this server's backlog, not a Redis failure)")
	fs.IntVar(&s.redisTimeoutsToFail, "redis-timeouts-to-fail", handshake.DefaultTimeoutsToFail, "Redis round trips in a row, of the handshake limiter or of the session caps, that must time out (-redis-timeout, measured from the write) before Redis is suspected and a PING confirms (-redis-confirm-timeout); one timeout may be this server's CPU, and a refused connection counts at once")
	fs.DurationVar(&s.redisConfirmTimeout, "redis-confirm-timeout", 0, "bound on the one PING that confirms -redis-timeouts-to-fail timeouts in a row: only if it fails too, while Redis answers no other call, does Redis count as unreachable and -limiter-fail apply; until then a timed-out decision is made in process memory. Not below -redis-timeout (0: "+fallback.DefaultConfirmTimeout.String()+", or -redis-timeout if that is longer)")
	fs.IntVar(&s.limiterShedKeys, "limiter-shed-keys", handshake.DefaultShedKeys, "most client addresses whose handshakes the limiter refuses without asking Redis, because Redis refused the address within its Retry-After or has enough of its decisions in hand (0: no shedding)")
	fs.IntVar(&s.limiterInFlight, "limiter-in-flight-per-key", 0, "most handshake decisions of one client address on their way to Redis at once; one more is refused without asking (0: the handshake zone's burst+1, the most that can pass at once; -1: no bound)")
}

// validateLimiter checks the settings of limiterFlags.
func (s *settings) validateLimiter() error {
	switch {
	case s.redisQueueWait <= 0:
		return badSetting("redis-queue-wait", s.redisQueueWait, "must be positive")
	case s.redisTimeoutsToFail < 1:
		return badSetting("redis-timeouts-to-fail", s.redisTimeoutsToFail, "must be at least 1")
	case s.redisConfirmTimeout < 0:
		return badSetting("redis-confirm-timeout", s.redisConfirmTimeout, "must not be negative (0: the default)")
	case s.redisConfirmTimeout > 0 && s.redisConfirmTimeout < s.redisTimeout:
		return badSetting("redis-confirm-timeout", s.redisConfirmTimeout, "must not be below -redis-timeout: a shorter PING would confirm nothing the timed-out calls did not say")
	case s.limiterShedKeys < 0:
		return badSetting("limiter-shed-keys", s.limiterShedKeys, "must not be negative (0 turns shedding off)")
	case s.limiterInFlight < -1:
		return badSetting("limiter-in-flight-per-key", s.limiterInFlight, "must be -1 (no bound), 0 (burst+1) or positive")
	}
	return nil
}

// limiterConfig applies the settings to the limiter's and the Redis
// store's configurations.
func (s *settings) limiterConfig(hcfg *handshake.Config, rcfg *handshake.RedisConfig) {
	rcfg.MaxQueueWait = s.redisQueueWait
	rcfg.TimeoutsToFail = s.redisTimeoutsToFail
	hcfg.ConfirmTimeout = s.confirmTimeout()
	hcfg.ShedKeys = s.limiterShedKeys
	if hcfg.ShedKeys == 0 {
		hcfg.ShedKeys = -1 // the flag's 0 is off; the library's is its default
	}
	hcfg.MaxInFlightPerKey = s.limiterInFlight
}

// capsConfig applies the judgement of Redis to the session caps' and
// their Redis store's configurations.
func (s *settings) capsConfig(cfg *sessioncap.Config, rcfg *sessioncap.RedisConfig) {
	cfg.ConfirmTimeout = s.confirmTimeout()
	rcfg.TimeoutsToFail = s.redisTimeoutsToFail
}

// confirmTimeout is -redis-confirm-timeout with its default applied.
func (s *settings) confirmTimeout() time.Duration {
	if s.redisConfirmTimeout > 0 {
		return s.redisConfirmTimeout
	}
	return max(fallback.DefaultConfirmTimeout, s.redisTimeout)
}
