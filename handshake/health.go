package handshake

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTimeoutsToFail is the default RedisConfig.TimeoutsToFail. A server
// whose CPU is saturated can miss one round trip's Timeout although Redis
// answered in time: the answer waits in the socket until the goroutine
// reading it is scheduled. A hung or partitioned Redis times out every
// round trip, so three in a row tell the two apart at the cost of two more
// Timeouts (100 ms by default) before fallback mode starts in a real
// outage; a refused or reset connection starts it at once.
const DefaultTimeoutsToFail = 3

// health judges, from the round trips a RedisStore makes, whether Redis
// itself is failing: the last round trip failed with an error other than
// a timeout (connection refused or reset, an error reply), a dial failed
// since the last round trip that succeeded (see dialWatch), or the last
// timeoutsToFail round trips in a row timed out. A decision that never
// reached Redis (a full queue, a long wait in it, a caller gone) says
// nothing about Redis and is not reported.
//
// Each round trip is reported once, however many decisions it carried:
// a pipeline of 100 decisions that timed out is one timeout, not 100.
type health struct {
	timeoutsToFail int64
	// timeout is RedisConfig.Timeout, the bound of a round trip.
	timeout time.Duration
	// timeouts counts the round trips in a row that timed out.
	timeouts atomic.Int64
	// broken is set by a round trip that failed otherwise, cleared by
	// one that succeeded.
	broken atomic.Bool
}

// roundTrip records the outcome of one round trip to Redis that took
// took, from writing its command to learning its outcome. parent is the
// context the caller gave (nil for the pipeline's own): a round trip cut
// short because its caller went away says nothing about Redis.
//
// A timeout noticed more than a whole Timeout after its deadline (took
// above twice Timeout) is not counted: the goroutine waiting for the
// answer was kept from running that long, so this server's CPU, not
// Redis, is the likelier cause (a saturated server cannot read an answer
// that has arrived), and a Redis that hangs on an idle server is noticed
// at its deadline.
func (h *health) roundTrip(parent context.Context, took time.Duration, err error) {
	switch {
	case err == nil:
		h.timeouts.Store(0)
		h.broken.Store(false)
	case parent != nil && parent.Err() != nil:
	case isTimeout(err) && took > 2*h.timeout:
	case isTimeout(err):
		h.timeouts.Add(1)
	default:
		h.broken.Store(true)
	}
}

// failing reports whether the round trips so far say Redis is failing.
func (h *health) failing() bool {
	return h.broken.Load() || h.timeouts.Load() >= h.timeoutsToFail
}

// isTimeout reports whether err is a round trip that ran out of time:
// the context's deadline or a socket deadline (go-redis with
// ContextTimeoutEnabled sets one from the context).
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialWatch is a redis.Hook that reports failed dials to a store's health.
// go-redis dials in the background and retries, so a command waiting for
// a connection to a Redis that refuses them fails only with its own
// timeout; the dial's error, seen here, says that Redis is unreachable.
type dialWatch struct{ h *health }

func (w dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		// A dial cut short by its context, or slower than it allowed
		// (a busy server dials slowly too), is judged by the round trip
		// that waited for it, as a timeout.
		if err != nil && !errors.Is(err, context.Canceled) && !isTimeout(err) {
			w.h.broken.Store(true)
		}
		return c, err
	}
}

func (dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
