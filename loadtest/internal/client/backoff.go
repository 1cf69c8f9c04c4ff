package client

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The reconnect schedule's defaults, the same as those of the browser
// helper the server ships (web/static/reconnect.js).
const (
	// BackoffBase is the ceiling of the first retry's delay: one second
	// spreads a crowd dropped in the same instant over a second, and a
	// lone client is back before a person notices.
	BackoffBase = time.Second
	// BackoffCap is the highest ceiling: after five failures in a row a
	// client waits up to 30 s, which keeps a dead server's clients from
	// hammering it while it restarts and still brings them back within a
	// minute of its return.
	BackoffCap = 30 * time.Second
	// RetryAfterMax bounds a Retry-After a server sends: a larger one is
	// read as this, so that a bad header cannot park a client for days.
	RetryAfterMax = time.Hour
	// retrySpread is the width of the uniform random time added to a
	// known Retry-After: the server already spreads the whole seconds,
	// this spreads the clients that drew the same second.
	retrySpread = time.Second
)

// Backoff is a reconnect schedule: exponential backoff with full jitter,
// and a server's Retry-After when one is known.
//
// Without a Retry-After, the delay before the retry that follows n
// failures in a row is drawn uniformly from [0, min(Cap, Base·2ⁿ)) ("full
// jitter": clients dropped in the same instant come back spread over the
// whole window instead of together at its end). With one, the delay is
// the Retry-After plus a uniform fraction of a second, never less: the
// server chose when it can take the client again. Either way the failure
// counts, so a client refused with Retry-After that then finds no answer
// backs off from where it was.
//
// The zero value uses BackoffBase, BackoffCap and math/rand/v2. A Backoff
// is not safe for concurrent use: it belongs to one client.
type Backoff struct {
	// Base is the first ceiling; zero means BackoffBase.
	Base time.Duration
	// Cap is the highest ceiling; zero means BackoffCap.
	Cap time.Duration
	// Rand returns a uniform value in [0, 1); nil means rand.Float64.
	Rand func() float64

	failures int // failed attempts since the last Reset
}

// Ceiling returns the upper bound of the next delay drawn without a
// Retry-After.
func (b *Backoff) Ceiling() time.Duration {
	base, hi := b.Base, b.Cap
	if base <= 0 {
		base = BackoffBase
	}
	if hi <= 0 {
		hi = BackoffCap
	}
	c := base
	for range b.failures {
		if c >= hi {
			break
		}
		c *= 2
	}
	return min(c, hi)
}

// Next records a failed attempt and returns how long to wait before the
// next one. retryAfter is the server's Retry-After, 0 when none is known.
func (b *Backoff) Next(retryAfter time.Duration) time.Duration {
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	var d time.Duration
	if retryAfter > 0 {
		d = min(retryAfter, RetryAfterMax) + time.Duration(r()*float64(retrySpread))
	} else {
		d = time.Duration(r() * float64(b.Ceiling()))
	}
	b.failures++
	return d
}

// Failures returns the failed attempts since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// Reset starts the schedule again: call it once a connection reached
// CONNECTED and stayed up, not on CONNECTED alone, or a server that
// accepts and then drops a client would be retried at the first ceiling
// forever.
func (b *Backoff) Reset() { b.failures = 0 }

// RetryAfter returns the Retry-After err carries: that of a handshake
// refused with 429 or 503, or the retry-after header of an ERROR frame.
// It returns 0 when err carries none.
func RetryAfter(err error) time.Duration {
	var he *HandshakeError
	if errors.As(err, &he) && (he.Status == http.StatusTooManyRequests || he.Status == http.StatusServiceUnavailable) {
		return he.RetryAfter
	}
	var ef *ErrorFrame
	if errors.As(err, &ef) {
		return ef.RetryAfter
	}
	return 0
}

// ParseRetryAfter reads a Retry-After value: whole seconds (RFC 9110
// section 10.2.3) or an HTTP date, measured from now. It returns 0 for an
// absent, unreadable or past value, and at most RetryAfterMax.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n > uint64(RetryAfterMax/time.Second):
		return RetryAfterMax
	case err == nil:
		d = time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), RetryAfterMax)
}
