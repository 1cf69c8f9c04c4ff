package handshake

import (
	"context"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// Bounds on a Limit. They keep every intermediate value of the decision
// below 2^53, so the Lua script (whose numbers are float64) computes exactly
// what the Go code computes with int64; see doc.go.
const (
	// MaxRate is the largest Limit.Rate: 1,000,000 requests per second.
	MaxRate = 1_000_000_000
	// MaxBurst is the largest Limit.Burst.
	MaxBurst = 1_000_000
	// maxNameLen bounds Limit.Name, which becomes part of Redis keys and of
	// the RateLimit-Policy header.
	maxNameLen = 64
)

// Names of the stores that can answer a decision, as reported in
// Result.Store. They are also suitable as a bounded metrics label.
const (
	// StoreRedis: the RedisStore answered.
	StoreRedis = outcome.StoreRedis
	// StoreMemory: the MemoryStore answered, either because it is the only
	// store or because Redis failed and the Limiter fell back to it.
	StoreMemory = outcome.StoreMemory
	// StoreNone: no store answered; the Limiter refused the request itself
	// because Redis failed and Config.FailClosed is set.
	StoreNone = outcome.StoreNone
	// StoreLocal: no store was asked; the Limiter refused the request
	// itself, shedding it, because Redis refused the key moments ago or
	// has enough of its decisions on their way (Result.Local says which).
	StoreLocal = outcome.StoreLocal
)

// Limit is one zone's numbers, in the units nginx's limit_req uses
// internally.
//
// Rate is in requests per second × 1000 (3r/s is 3000, 30r/m is 500); Burst
// is in whole requests, as in `limit_req burst=N nodelay`. From rest, Burst+1
// requests pass back to back. Name identifies the zone: it separates the
// state of different zones for the same key and names the policy in the
// RateLimit-Policy header.
type Limit struct {
	// Name is the zone's name, e.g. "ws_handshake": 1 to 64 printable ASCII
	// characters without space, quote, backslash or braces.
	Name string
	// Rate is the sustained rate in requests per second × 1000, from 1 to
	// MaxRate.
	Rate int64
	// Burst is how many requests beyond the sustained rate may pass at
	// once, from 0 to MaxBurst.
	Burst int
}

// Validate reports whether l can be used, naming the first bad field. The
// error wraps ErrInvalidLimit.
func (l Limit) Validate() error {
	if l.Name == "" {
		return limitErrorf("Limit.Name is empty")
	}
	if len(l.Name) > maxNameLen {
		return limitErrorf("Limit.Name %q is longer than %d bytes", l.Name, maxNameLen)
	}
	for i := 0; i < len(l.Name); i++ {
		c := l.Name[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '{' || c == '}' {
			return limitErrorf("Limit.Name %q contains %q", l.Name, c)
		}
	}
	if l.Rate <= 0 {
		return limitErrorf("limit %s: Rate %d is not positive", l.Name, l.Rate)
	}
	if l.Rate > MaxRate {
		return limitErrorf("limit %s: Rate %d is above MaxRate %d", l.Name, l.Rate, MaxRate)
	}
	if l.Burst < 0 {
		return limitErrorf("limit %s: Burst %d is negative", l.Name, l.Burst)
	}
	if l.Burst > MaxBurst {
		return limitErrorf("limit %s: Burst %d is above MaxBurst %d", l.Name, l.Burst, MaxBurst)
	}
	return nil
}

// Result is the outcome of one decision. It is returned by value.
type Result struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// RetryAfter is, for a refused request, how long until the same request
	// would pass (for a ban, until the ban ends), in whole milliseconds and
	// at least 1ms. It is 0 when Allowed. HTTP's Retry-After rounds it up
	// to whole seconds.
	RetryAfter time.Duration
	// Excess is the key's excess after the decision, in thousandths of a
	// request: 0 for a bucket at rest, at most Burst×1000. A refusal leaves
	// it unchanged. Burst - ceil(Excess/1000) more requests would pass now.
	Excess int64
	// Store names what answered: StoreRedis, StoreMemory (also for a
	// decision made by the in-process fallback while Redis is down),
	// StoreNone (refused by Config.FailClosed while Redis is down) or
	// StoreLocal (shed: refused without asking Redis).
	Store string
	// Local says why the Limiter answered without Redis although Redis is
	// not judged failing: LocalRefused or LocalInFlight (shed, Store
	// StoreLocal), LocalQueueFull, LocalQueueWait or LocalTimeout
	// (decided in Memory). Empty otherwise.
	Local string
	// Banned reports that the request was refused because its key is
	// banned (see Banner), not because of its rate. Allowed is then false.
	Banned bool
}

// Handshake is how the handshake ends by this decision: nil when Allowed
// (the server counts the upgrade once it has gone through), else
// HandshakeRejectedBan for a ban, HandshakeStoreError when no store
// answered, HandshakeRejectedLimit for the rate.
func (r Result) Handshake() *outcome.Handshake {
	switch {
	case r.Allowed:
		return nil
	case r.Banned:
		return outcome.HandshakeRejectedBan
	case r.Store == StoreNone:
		return outcome.HandshakeStoreError
	}
	return outcome.HandshakeRejectedLimit
}

// Store makes one rate decision for key under l. Implementations are
// *MemoryStore and *RedisStore; both apply the same nginx limit_req
// algorithm and honour bans set through their Ban method.
//
// Implementations must be safe for concurrent use. An error means no
// decision was made: the limit was invalid, the key empty, or the store
// unreachable.
type Store interface {
	Allow(ctx context.Context, key string, l Limit) (Result, error)
}

// Banner bans a key (a client IP or a principal) for d: until the ban ends,
// every decision for the key is a refusal with Result.Banned set, whatever
// the zone. A d of zero or less lifts the ban.
type Banner interface {
	Ban(ctx context.Context, key string, d time.Duration) error
}

// BanChecker reports, without counting a request, whether key is banned
// and for how much longer. It is how a key that is only known after the
// handshake (a principal, at CONNECT) has its ban honoured. An error means
// no answer: the key was empty, the store unreachable, or ctx ended.
type BanChecker interface {
	Banned(ctx context.Context, key string) (retryAfter time.Duration, banned bool, err error)
}

// Compile-time checks that the stores and the Limiter implement the
// interfaces.
var (
	_ Store  = (*MemoryStore)(nil)
	_ Store  = (*RedisStore)(nil)
	_ Store  = (*Limiter)(nil)
	_ Banner = (*MemoryStore)(nil)
	_ Banner = (*RedisStore)(nil)
	_ Banner = (*Limiter)(nil)

	_ BanChecker = (*MemoryStore)(nil)
	_ BanChecker = (*RedisStore)(nil)
	_ BanChecker = (*Limiter)(nil)
)

// bucket is one key's state: the excess in thousandths of a request and the
// millisecond of the last accepted request.
type bucket struct {
	excess int64
	lastMs int64
}

// decide applies nginx's limit_req decision to one request at nowMs. fresh
// says the key has no state (never seen, expired or evicted), in which case
// b is ignored. It returns whether the request passes, the state to store
// (b itself when refused: a refusal changes nothing) and, when refused, the
// milliseconds until a request would pass. The formula and its bounds are
// described in doc.go; limit.lua is the same function in Lua.
func decide(b bucket, fresh bool, nowMs, rate int64, burst int) (allowed bool, next bucket, retryMs int64) {
	if fresh {
		// nginx creates the node with excess 0: the request that creates
		// a key costs nothing, so burst+1 requests pass from rest.
		return true, bucket{excess: 0, lastMs: nowMs}, 0
	}
	elapsed := nowMs - b.lastMs
	if elapsed < 0 {
		// The clock went back. nginx takes the absolute value; a clock
		// step must not refill the bucket, so it counts as no time.
		elapsed = 0
	}
	// Past drainMs the bucket is empty whatever the elapsed time, so the
	// product rate*elapsed can be capped there without changing the result
	// and without overflowing (or, in Lua, losing precision).
	if drainMs := (b.excess+1000)*1000/rate + 1; elapsed > drainMs {
		elapsed = drainMs
	}
	excess := b.excess - rate*elapsed/1000 + 1000
	if excess < 0 {
		excess = 0
	}
	limit := int64(burst) * 1000
	if excess > limit {
		// The request at lastMs+t passes once rate*t/1000 (integer
		// division) has drained need thousandths: the smallest such t is
		// ceil(need*1000/rate).
		need := b.excess + 1000 - limit
		t := (need*1000 + rate - 1) / rate
		retryMs = b.lastMs + t - nowMs
		if retryMs < 1 {
			retryMs = 1
		}
		return false, b, retryMs
	}
	return true, bucket{excess: excess, lastMs: nowMs}, 0
}

// banMs is a ban's length in milliseconds, rounded up so that a short
// positive ban is not mistaken for lifting one; 0 for d <= 0.
func banMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
