// Package retryafter draws the Retry-After of a refusal at random, so
// that the clients refused in the same instant do not all come back in
// the same instant. It is shared by every refusal that says when to
// retry: the handshake limiter's and the session caps' 429, the server's
// shutdown 503 and the ERROR frames that refuse a CONNECT. The instance
// admission's 503 spreads its clients by a schedule of its own (package
// admission) and uses Seconds only.
//
// A refusal that knows the earliest moment a retry can pass (a bucket's
// next token, a ban's end) announces a whole number of seconds drawn
// uniformly from
//
//	[Seconds(d), Seconds(d) + Seconds(Spread(d))]
//
// never below the true time, so no client is told to come back too
// early, and never more than MaxSpread above it.
package retryafter

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// MaxSpread bounds the jitter added above a refusal's true retry time:
// a client is never sent away more than this beyond the earliest moment
// it could pass. Ten seconds spreads the largest burst the handshake
// limits let through (a whole office behind one address) over ten
// whole-second steps while costing a person at most ten seconds.
const MaxSpread = 10 * time.Second

// MinSpread is the least jitter: a refusal whose true time is below two
// seconds still spreads its clients over two whole-second steps.
const MinSpread = time.Second

// Seconds rounds d up to whole seconds, at least 1: a refusal never
// says "retry now".
func Seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(s, 1)
}

// Spread is the width of the jitter window above a true retry time d:
// half of d, at least MinSpread and at most MaxSpread.
func Spread(d time.Duration) time.Duration {
	return min(max(d/2, MinSpread), MaxSpread)
}

// Jittered returns the whole seconds to announce for a refusal whose
// earliest passing retry is d from now: uniform over [Seconds(d),
// Seconds(d)+Seconds(Spread(d))]. rnd returns a uniform value in [0, 1);
// nil means math/rand/v2's Float64, safe for concurrent use.
func Jittered(d time.Duration, rnd func() float64) int64 {
	return Between(Seconds(d), Seconds(d)+Seconds(Spread(d)), rnd)
}

// Between returns a whole number of seconds uniform over [lo, hi]
// (both included); hi below lo means lo. lo below 1 counts as 1.
func Between(lo, hi int64, rnd func() float64) int64 {
	lo = max(lo, 1)
	if hi <= lo {
		return lo
	}
	if rnd == nil {
		rnd = rand.Float64
	}
	n := hi - lo + 1
	k := int64(rnd() * float64(n))
	return lo + min(max(k, 0), n-1)
}

// Header formats seconds for a Retry-After header or a retry-after
// ERROR header.
func Header(seconds int64) string { return strconv.FormatInt(seconds, 10) }
