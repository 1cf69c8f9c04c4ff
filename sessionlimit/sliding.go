package sessionlimit

import (
	"math"
	"sync"
	"time"
)

// SlidingWindow is a sliding-window counter: it counts frames in consecutive
// windows, like FixedWindow, and lets a frame pass if the estimate including
// it stays within the limit:
//
//	prev × (1 − elapsed/window) + cur + 1 ≤ limit
//
// where cur counts the current window's frames so far, prev the previous
// window's, and elapsed is the time since the current window opened. The
// previous window's frames are assumed to have been spread evenly, and the
// share of them that still lies within one window of now is weighed in. It
// keeps two counters and a start time, O(1) memory (40 bytes on 64-bit
// platforms, a 48-byte allocation) whatever the rate.
//
// The first frame after an idle period of at least two windows opens a
// window; while frames keep coming, windows follow each other back to back
// from there. Each such window passes at most limit frames, and any interval
// one window long passes at most limit plus the number by which the previous
// window's frames inside it exceed their even share: exactly limit when that
// traffic was even, never more than 2×limit − 1. The package documentation
// proves the bound and compares it with FixedWindow's.
//
// A frame whose time is before the current window's start counts in the
// current window, as if it arrived at that start.
//
// The zero value is ready to use and applies the defaults, DefaultLimit per
// DefaultWindow. A SlidingWindow is safe for concurrent use and must not be
// copied after first use.
type SlidingWindow struct {
	// mu guards every field below it.
	mu     sync.Mutex
	limit  int32 // frames per window; 0 until the zero value takes defaults
	cur    int32 // frames passed in the current window
	prev   int32 // frames passed in the window before it
	window int64 // window length in nanoseconds
	start  int64 // current window's start on the nanos clock
}

// NewSlidingWindow returns a SlidingWindow passing about limit frames per
// window. A limit or window of zero or less means the default (DefaultLimit,
// DefaultWindow); use New or NewFactory to have such values reported as
// errors instead.
func NewSlidingWindow(limit int, window time.Duration) *SlidingWindow {
	l, w := normalize(limit, window)
	return &SlidingWindow{limit: l, window: w}
}

// Allow is shorthand for AllowAt(time.Now()).
func (l *SlidingWindow) Allow() bool {
	return l.AllowAt(time.Now())
}

// AllowAt reports whether a frame arriving at now may pass, and counts it if
// so.
func (l *SlidingWindow) AllowAt(now time.Time) bool {
	ok, _ := l.allow(nanos(now))
	return ok
}

// AllowNAt reports whether n frames arriving together at now may all pass
// (the estimate including all of them stays within the limit), and counts
// them all if so, none otherwise.
func (l *SlidingWindow) AllowNAt(now time.Time, n int) bool {
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
func (l *SlidingWindow) allow(now int64) (ok bool, start int64) {
	return l.allowN(now, 1)
}

// allowN is AllowNAt on the nanos clock, n > 0.
func (l *SlidingWindow) allowN(now int64, n int32) (ok bool, start int64) {
	l.mu.Lock()
	if l.limit == 0 {
		l.limit, l.window = DefaultLimit, int64(DefaultWindow)
	}
	elapsed := now - l.start
	if elapsed >= l.window {
		if elapsed-l.window < l.window {
			// The next window, back to back with this one.
			l.prev = l.cur
			l.start += l.window
			elapsed -= l.window
		} else {
			// Idle for two windows or more: nothing recent to weigh.
			l.prev = 0
			l.start = now
			elapsed = 0
		}
		l.cur = 0
	}
	// The frames pass if prev×(window−elapsed)/window + cur + n ≤ limit.
	// Multiplying through by window avoids a division; the products are
	// exact below 2^53 (150,000 frames per minute, say) and off by a relative
	// 2^-53 at most beyond.
	ok = n <= l.limit-l.cur
	if ok && l.prev > 0 {
		elapsed = max(elapsed, 0)
		ok = float64(l.prev)*float64(l.window-elapsed) <= float64(l.limit-n-l.cur)*float64(l.window)
	}
	if ok {
		l.cur += n
	}
	start = l.start
	l.mu.Unlock()
	return ok, start
}
