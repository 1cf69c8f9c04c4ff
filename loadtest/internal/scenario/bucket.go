package scenario

// leakyBucket replays the handshake limiter's rule (nginx limit_req with
// burst and nodelay, as documented in the handshake package) on one
// client's request times, to say how many requests the server should have
// accepted. Arithmetic is in integers as in nginx: rate is requests per
// second × 1000, time is whole milliseconds, excess is in thousandths of a
// request.
type leakyBucket struct {
	rate   int64 // r/s × 1000
	burst  int64
	excess int64
	last   int64 // ms of the last accepted request
	known  bool
}

// allow decides one request at nowMS.
func (b *leakyBucket) allow(nowMS int64) bool {
	if !b.known {
		b.known, b.excess, b.last = true, 0, nowMS
		return true
	}
	elapsed := max(nowMS-b.last, 0)
	excess := max(b.excess-b.rate*elapsed/1000+1000, 0)
	if excess > b.burst*1000 {
		return false
	}
	b.excess, b.last = excess, nowMS
	return true
}

// expectedAccepted replays times (ms since the first request, ascending)
// through a fresh bucket of ratePerSec and burst.
func expectedAccepted(ratePerSec float64, burst int, timesMS []int64) int {
	b := leakyBucket{rate: int64(ratePerSec * 1000), burst: int64(burst)}
	n := 0
	for _, t := range timesMS {
		if b.allow(t) {
			n++
		}
	}
	return n
}

// closedFormAccepted is the rule of thumb the policy states: burst+1 at
// once, then rate per second over the span of the attempts, never more
// than were made.
func closedFormAccepted(ratePerSec float64, burst, attempts int, spanSeconds float64) int {
	return min(attempts, burst+1+int(ratePerSec*spanSeconds))
}
