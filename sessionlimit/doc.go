// Package sessionlimit provides per-session STOMP message limiters.
//
// A server keeps one Limiter inside each session and asks it, for every
// limited frame, whether the frame may pass (Limiter.AllowAt). There is no
// shared map and no global lock: sessions never contend with each other, and
// an idle session costs only its limiter's few dozen bytes, because nothing
// runs between frames. Frames that are refused are meant to be dropped
// silently by the caller; they are not counted against the session.
//
// Time is always an argument (AllowAt(now)); each limiter's Allow is
// shorthand for AllowAt(time.Now()). Tests pass fixed instants.
//
// # Algorithms
//
// Config.Algorithm selects one of three limiters with the same O(1) state: a
// mutex, two or three integers, no per-frame timestamps.
//
//   - Fixed (the default, FixedWindow): up to Limit frames per Window. A window
//     opens at the first frame that finds the previous one expired (lazy
//     reset), so windows are aligned to a session's own traffic, not to the
//     wall clock.
//   - Sliding (SlidingWindow): counts like Fixed, but weighs the previous
//     window's count into the current one in proportion to how much of the
//     previous window still lies within one Window of now.
//   - Token (TokenBucket): a bucket of Limit tokens refilled at Limit per
//     Window, starting full.
//
// # The fixed-window boundary effect
//
// A fixed window bounds each window, not each interval one window long. With
// Limit 20 and Window 1s, take a session whose window was opened by a single
// frame at t0, then a script that fires 20 frames at t0+900ms and 20 more at
// t0+1s. At t0+900ms 19 pass (the window still holds the first frame); at t0+1s
// the window has expired, a new one opens, and all 20 pass: 39 frames in 100ms.
// In general, when frames arrive in time order, any interval one Window long
// overlaps at most two windows and misses the frame that opened the first of
// them, so it holds at most 2×Limit − 1 passed frames, and that many can pass.
// At 20 per second against the 1.3 frames per second of a real user this is
// harmless, and it keeps the cost per frame one short critical section; that
// is why Fixed is the default. ExampleFixedWindow shows the effect.
//
// # The sliding counter's bound
//
// Let windows k−1 and k lie back to back, window k starting at s, and let P be
// the number of frames window k−1 passed. A frame at s+f×Window (0 ≤ f < 1)
// passes only if P×(1−f) + c ≤ Limit − 1, where c is the number window k has
// already passed. Take any interval [a, a+Window) with s−Window < a ≤ s, let x
// be the frames of window k−1 inside it and g = (a+Window−s)/Window the part
// of it inside window k. The last frame window k passes within the interval
// has f < g, so window k passes at most Limit − P×(1−g) frames there, and
// the interval holds at most
//
//	Limit + (x − P×(1−g))
//
// frames: Limit plus the amount by which window k−1's frames inside the
// interval exceed their even share P×(1−g). If window k−1's traffic was even,
// that is Limit. Since x ≤ P ≤ Limit and g < 1, it is also always below
// 2×Limit, so at most 2×Limit − 1. That worst case is reached: window k−1
// passes Limit frames packed against its end (it can when the window before
// it passed none) and window k passes Limit − 1 just before its own end. An
// interval that overlaps a single window holds at most Limit, and after an
// idle period of two windows or more the counter starts afresh with nothing
// to weigh, since no earlier frame then lies within one window of a new one.
// As for the fixed window, this holds when frames arrive in time order; a
// frame timed before its window's start counts as if it came at that start.
//
// On the burst timeline above, the sliding counter passes the opening frame
// and 19 frames at t0+900ms, then none at t0+1s, where the estimate is still
// 20: Limit in all, not 2×Limit − 1.
//
// # The token bucket's bound
//
// A token takes I = Window/Limit (rounded up to the nanosecond) to refill. In
// any interval of length d the bucket passes fewer than Limit + d/I frames: a
// full bucket, then one frame per I. For d = Window that is at most
// 2×Limit − 1, after which the rate is exactly the sustained Limit per Window.
//
// # Disabling
//
// There is no unlimited setting. A server that wants no per-session limit does
// not install the limiting stage, which costs nothing per frame.
package sessionlimit
