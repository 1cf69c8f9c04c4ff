package server

import (
	"math"
	"time"

	"github.com/stompgate/stompgate/internal/retryafter"
	"github.com/stompgate/stompgate/stompframe"
)

// RetryAfterHeader is the header of an ERROR frame that ends or refuses
// a session and knows when a new one can pass: whole seconds, at least
// 1, drawn at random so that the clients told together do not come back
// together (the STOMP counterpart of HTTP's Retry-After).
const RetryAfterHeader = "retry-after"

// DefaultRetryRate is the default Config.RetryRate: the clients of the
// sessions a shutdown ends are spread as if the instances left admitted
// a hundred new sessions a second each, what one accepts without effort.
// A program with an admission rate passes it.
const DefaultRetryRate = 100

// DefaultRetryAfterMax is the default Config.RetryAfterMax: no client is
// told to wait more than a minute.
const DefaultRetryAfterMax = time.Minute

// retryDefaults fills and checks RetryRate and RetryAfterMax.
func (c *Config) retryDefaults() error {
	switch {
	case c.RetryRate < 0 || math.IsNaN(c.RetryRate) || math.IsInf(c.RetryRate, 0):
		return configErrorf("RetryRate %v is not a rate (want 0 or more per second)", c.RetryRate)
	case c.RetryAfterMax < 0:
		return configErrorf("RetryAfterMax %v is negative", c.RetryAfterMax)
	}
	if c.RetryRate == 0 {
		c.RetryRate = DefaultRetryRate
	}
	if c.RetryAfterMax == 0 {
		c.RetryAfterMax = DefaultRetryAfterMax
	}
	return nil
}

// shutdownRetryWindow is the last whole second of the window the
// retry-after of the ERROR frames ending n sessions over period is drawn
// from (the first being 1): the sessions leave over the period, and the
// window adds what the period lacks for n clients to come back at
// RetryRate, so that closures and retries together arrive at about that
// rate. At least 1, at most RetryAfterMax.
func (s *Server) shutdownRetryWindow(n int, period time.Duration) int64 {
	need := float64(n)/s.cfg.RetryRate - period.Seconds()
	most := retryafter.Seconds(s.cfg.RetryAfterMax)
	return min(max(int64(math.Ceil(need)), 1), most)
}

// retryAfterHeaders returns the retry-after header of an ERROR frame,
// drawn uniformly over [1, window] seconds.
func retryAfterHeaders(window int64) []stompframe.Header {
	return []stompframe.Header{{Name: RetryAfterHeader, Value: retryafter.Header(retryafter.Between(1, window, nil))}}
}

// rejectRetryHeaders returns the retry-after header of a stage's
// rejection that says when a retry can pass (interceptor.Result's
// RetryAfter), jittered above it; none for zero.
func rejectRetryHeaders(d time.Duration) []stompframe.Header {
	if d <= 0 {
		return nil
	}
	return []stompframe.Header{{Name: RetryAfterHeader, Value: retryafter.Header(retryafter.Jittered(d, nil))}}
}
