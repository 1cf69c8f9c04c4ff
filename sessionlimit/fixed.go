package sessionlimit

import (
	"math"
	"sync"
	"time"
)

// FixedWindow allows up to a limit of frames per window, counting them in
// fixed windows with lazy reset: a window opens at the first frame that finds
// the previous one expired and lasts the window length from there. Nothing
// runs between frames (no goroutine, no ticker), so an idle session costs
// only its memory: 32 bytes on 64-bit platforms.
//
// Windows are aligned to their first frame, not to the epoch or the wall
// clock second. A session's first frame therefore always gets a full window
// ahead of it, and sessions' windows are spread over time instead of all
// resetting at the same instant. Either way, a client that bursts on both
// sides of an edge passes up to twice the limit in a short time; see the
// package documentation.
//
// A frame whose time is before the current window's start, as happens when
// concurrent callers read the clock and then race for the lock, counts in the
// current window. So each window passes at most the limit, whatever the order
// of calls.
//
// The zero value is ready to use and applies the defaults, DefaultLimit per
// DefaultWindow. A FixedWindow is safe for concurrent use and must not be
// copied after first use.
type FixedWindow struct {
	// mu guards every field below it. The expiry check, the reset, the
	// increment and the comparison run in one critical section: with separate
	// atomics a frame refused in the old window could be counted in the new
	// one when two callers cross the edge together.
	mu     sync.Mutex
	limit  int32 // frames per window; 0 until the zero value takes defaults
	count  int32 // frames passed in the current window, at most limit
	window int64 // window length in nanoseconds
	start  int64 // current window's start on the nanos clock
}

// NewFixedWindow returns a FixedWindow passing limit frames per window. A
// limit or window of zero or less means the default (DefaultLimit,
// DefaultWindow); use New or NewFactory to have such values reported as
// errors instead.
func NewFixedWindow(limit int, window time.Duration) *FixedWindow {
	l, w := normalize(limit, window)
	return &FixedWindow{limit: l, window: w}
}

// Allow is shorthand for AllowAt(time.Now()).
func (l *FixedWindow) Allow() bool {
	return l.AllowAt(time.Now())
}

// AllowAt reports whether a frame arriving at now may pass, and counts it if
// so. If now is at or past the end of the current window, a new window opens
// at now.
func (l *FixedWindow) AllowAt(now time.Time) bool {
	ok, _ := l.allow(nanos(now))
	return ok
}

// AllowNAt reports whether n frames arriving together at now fit in the
// current window, and counts them all if so, none otherwise.
func (l *FixedWindow) AllowNAt(now time.Time, n int) bool {
	if n <= 0 {
		return true
	}
	if n > math.MaxInt32 {
		return false
	}
	ok, _ := l.allowN(nanos(now), int32(n))
	return ok
}

// allow is AllowAt on the nanos clock. It also returns the start of the
// window the frame was counted in, which tests use to check each window.
func (l *FixedWindow) allow(now int64) (ok bool, start int64) {
	return l.allowN(now, 1)
}

// allowN is AllowNAt on the nanos clock, n > 0.
func (l *FixedWindow) allowN(now int64, n int32) (ok bool, start int64) {
	l.mu.Lock()
	if l.limit == 0 {
		l.limit, l.window = DefaultLimit, int64(DefaultWindow)
	}
	// Both values lie within ±2^62, so the difference cannot overflow.
	if now-l.start >= l.window {
		l.start = now
		l.count = 0
	}
	ok = n <= l.limit-l.count
	if ok {
		l.count += n
	}
	start = l.start
	l.mu.Unlock()
	return ok, start
}
