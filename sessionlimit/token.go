package sessionlimit

import (
	"math"
	"sync"
	"time"
)

// TokenBucket is a token bucket holding up to a limit of tokens and refilled
// at the limit per window; each frame takes one token. It starts full, so a
// session may send a burst of the limit at once, and after that the limit per
// window evenly spread.
//
// It keeps the bucket as a single instant, the time at which it would be
// full again (the generic cell rate algorithm), so a frame costs one compare
// and one add and nothing runs between frames. One token takes
// window/limit, rounded up to the nanosecond: when limit does not divide
// the window, the refill is slower than the limit per window by less than
// one nanosecond per token, never faster.
//
// A frame timed earlier than frames already counted is judged at its own
// time against the tokens they left, which is never more lenient than
// judging it in order.
//
// The zero value is ready to use and applies the defaults, DefaultLimit per
// DefaultWindow. A TokenBucket is safe for concurrent use and must not be
// copied after first use.
type TokenBucket struct {
	// mu guards every field below it.
	mu       sync.Mutex
	interval int64 // nanoseconds one token takes to refill; 0 until defaults
	span     int64 // limit × interval: how far full may lie ahead of now
	full     int64 // instant on the nanos clock at which the bucket is full
}

// NewTokenBucket returns a full TokenBucket of limit tokens refilled at limit
// per window. A limit or window of zero or less means the default
// (DefaultLimit, DefaultWindow); use New or NewFactory to have such values
// reported as errors instead.
func NewTokenBucket(limit int, window time.Duration) *TokenBucket {
	l, w := normalize(limit, window)
	iv := tokenInterval(l, w)
	return &TokenBucket{interval: iv, span: int64(l) * iv}
}

// tokenInterval is window/limit rounded up. Both are positive, or both zero
// for a zero Factory; window ≤ maxWindow keeps limit × interval ≤ maxWindow +
// limit from overflowing.
func tokenInterval(limit int32, window int64) int64 {
	if limit == 0 {
		return 0
	}
	return (window + int64(limit) - 1) / int64(limit)
}

// Allow is shorthand for AllowAt(time.Now()).
func (l *TokenBucket) Allow() bool {
	return l.AllowAt(time.Now())
}

// AllowAt reports whether a token is available at now, and takes it if so.
func (l *TokenBucket) AllowAt(now time.Time) bool {
	return l.allow(nanos(now))
}

// AllowNAt reports whether n tokens are available at now, and takes them
// all if so, none otherwise.
func (l *TokenBucket) AllowNAt(now time.Time, n int) bool {
	if n <= 0 {
		return true
	}
	if n > math.MaxInt32 {
		return false
	}
	return l.allowN(nanos(now), int64(n))
}

func (l *TokenBucket) allow(now int64) bool { return l.allowN(now, 1) }

// allowN is AllowNAt on the nanos clock, n > 0.
func (l *TokenBucket) allowN(now int64, n int64) bool {
	l.mu.Lock()
	if l.interval == 0 {
		l.interval = tokenInterval(DefaultLimit, int64(DefaultWindow))
		l.span = DefaultLimit * l.interval
	}
	// full ≤ now means the bucket is full; the surplus time is not saved.
	// A batch larger than the bucket (span/interval is the limit) is
	// refused by a division, not by comparing n × interval, which can
	// overflow (2^22 frames at one per hour do); within the limit the
	// product is at most span. One frame always fits, and skips the
	// division on the per-frame path.
	if n > 1 && n > l.span/l.interval {
		l.mu.Unlock()
		return false
	}
	full := max(l.full, now) + n*l.interval
	ok := full-now <= l.span
	if ok {
		l.full = full
	}
	l.mu.Unlock()
	return ok
}
