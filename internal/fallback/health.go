package fallback

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultTimeoutsToFail is the default number of round trips in a row
// that must time out before a Health suspects Redis. A server whose CPU
// is saturated can miss one round trip's timeout although Redis answered
// in time: the answer waits in the socket until the goroutine reading it
// is scheduled. A hung or partitioned Redis times out every round trip,
// so three in a row tell the two apart better than one; a refused or
// reset connection counts at once.
const DefaultTimeoutsToFail = 3

// Health judges, from the round trips a store makes, whether Redis itself
// is failing. Its evidence is of two strengths:
//
//   - Broken: the last round trip failed with an error other than a
//     timeout (connection refused or reset, an error reply), or a dial
//     failed (see DialHook) since the last round trip that succeeded.
//     Nothing on this side causes that: fallback mode may start at once.
//   - TimedOut: the last TimeoutsToFail round trips in a row timed out.
//     A hung Redis does that, and so can this server's own CPU when it is
//     saturated for long: the Switch confirms with a PING of its own
//     before it believes it (see Config.ConfirmTimeout).
//
// A round trip that never reached Redis (a full queue, a long wait in
// it, a caller gone) says nothing about Redis and must not be reported.
// Each round trip is reported once, however many decisions it carried:
// a pipeline of 100 decisions that timed out is one timeout, not 100.
//
// The zero Health is not usable; call NewHealth. A Health is safe for
// concurrent use.
type Health struct {
	timeoutsToFail int64
	// timeout is the store's bound of one round trip.
	timeout time.Duration
	// timeouts counts the round trips in a row that timed out.
	timeouts atomic.Int64
	// broken is set by a round trip that failed otherwise, or a failed
	// dial; cleared by one that succeeded.
	broken atomic.Bool
	// answers counts the round trips that succeeded, so that a
	// confirmation can tell whether Redis answered anyone meanwhile.
	answers atomic.Uint64
}

// NewHealth returns a Health for round trips bounded by timeout, which
// suspects Redis after timeoutsToFail timeouts in a row (zero or less
// means DefaultTimeoutsToFail).
func NewHealth(timeout time.Duration, timeoutsToFail int) *Health {
	if timeoutsToFail <= 0 {
		timeoutsToFail = DefaultTimeoutsToFail
	}
	return &Health{timeout: timeout, timeoutsToFail: int64(timeoutsToFail)}
}

// RoundTrip records the outcome of one round trip to Redis that took
// took, from writing its command to learning its outcome. parent is the
// context the caller gave (context.Background() for a store's own round
// trips): a round trip cut short because its caller went away says
// nothing about Redis.
//
// A timeout noticed more than a whole timeout after its deadline (took
// above twice the timeout) is not counted: the goroutine waiting for the
// answer was kept from running that long, so this server's CPU, not
// Redis, is the likelier cause (a saturated server cannot read an answer
// that has arrived), and a Redis that hangs on an idle server is noticed
// at its deadline.
func (h *Health) RoundTrip(parent context.Context, took time.Duration, err error) {
	switch {
	case err == nil:
		h.answered()
	case parent != nil && parent.Err() != nil:
	case IsTimeout(err) && took > 2*h.timeout:
	case IsTimeout(err):
		h.timeouts.Add(1)
	default:
		h.broken.Store(true)
	}
}

// answered records that Redis answered: the evidence so far is void.
func (h *Health) answered() {
	h.timeouts.Store(0)
	h.broken.Store(false)
	h.answers.Add(1)
}

// Broken reports whether Redis refused, reset or failed a round trip or
// a dial since it last answered.
func (h *Health) Broken() bool { return h.broken.Load() }

// TimedOut reports whether the last TimeoutsToFail round trips in a row
// timed out.
func (h *Health) TimedOut() bool { return h.timeouts.Load() >= h.timeoutsToFail }

// Failing reports whether the round trips so far say Redis is failing,
// by either kind of evidence.
func (h *Health) Failing() bool { return h.Broken() || h.TimedOut() }

// IsTimeout reports whether err is a round trip that ran out of time:
// the context's deadline or a socket deadline (go-redis with
// ContextTimeoutEnabled sets one from the context).
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// DialHook returns a redis.Hook that reports failed dials to h; add it to
// the store's client. go-redis dials in the background and retries, so a
// command waiting for a connection to a Redis that refuses them fails
// only with its own timeout; the dial's error, seen here, says that
// Redis is unreachable. On a Cluster client, whose nodes dial, the hook
// sees no dial: there a refused connection counts as a timeout.
func (h *Health) DialHook() redis.Hook { return dialWatch{h} }

// dialWatch is the hook DialHook returns.
type dialWatch struct{ h *Health }

func (w dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		// A dial cut short by its context, or slower than it allowed
		// (a busy server dials slowly too), is judged by the round trip
		// that waited for it, as a timeout.
		if err != nil && !errors.Is(err, context.Canceled) && !IsTimeout(err) {
			w.h.broken.Store(true)
		}
		return c, err
	}
}

func (dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
