package handshake

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// step is one request of a timeline: at atMs after t0, the expected
// decision; wantExcess and wantRetryMs are checked unless negative.
type step struct {
	atMs        int64
	want        bool
	wantExcess  int64
	wantRetryMs int64
}

// timeline is a sequence of requests for one key, with the decisions nginx
// makes for them (limit_req with burst=Burst nodelay).
type timeline struct {
	name  string
	limit Limit
	steps []step
}

// ok and no build steps; excess and retry are checked when given.
func ok(atMs, excess int64) step {
	return step{atMs: atMs, want: true, wantExcess: excess, wantRetryMs: 0}
}
func no(atMs, excess, retry int64) step {
	return step{atMs: atMs, want: false, wantExcess: excess, wantRetryMs: retry}
}

// train is n requests every stepMs from startMs, all with the same outcome;
// excess and retry are not checked.
func train(startMs, stepMs int64, n int, want bool) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{atMs: startMs + int64(i)*stepMs, want: want, wantExcess: -1, wantRetryMs: -1}
	}
	return out
}

func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// sixAt is the six requests that a bucket at rest (3r/s burst=5) accepts at
// one instant, with their excess.
func sixAt(ms int64) []step {
	return []step{ok(ms, 0), ok(ms, 1000), ok(ms, 2000), ok(ms, 3000), ok(ms, 4000), ok(ms, 5000)}
}

var handshakeLimit = Limit{Name: "ws_handshake", Rate: 3000, Burst: 5}

// timelines are written from nginx's documented behaviour and its source
// (see doc.go), not from this package's code.
var timelines = []timeline{
	{
		name:  "first request",
		limit: handshakeLimit,
		steps: []step{ok(0, 0)},
	},
	{
		// burst=5 nodelay: 6 pass from rest, the 7th is refused and
		// may retry once 1000 thousandths have drained: 334ms at 3r/s.
		name:  "burst exhausted",
		limit: handshakeLimit,
		steps: concat(sixAt(0), []step{no(0, 5000, 334), no(0, 5000, 334), no(100, 5000, 234)}),
	},
	{
		// 333ms drains 999 (5000-999+1000 = 5001 > 5000), 334ms drains
		// 1002 (4998). The refusal at 333 does not move last.
		name:  "333ms refused, 334ms accepted at the burst edge",
		limit: handshakeLimit,
		steps: concat(sixAt(0), []step{no(333, 5000, 1), ok(334, 4998), no(334, 4998, 333)}),
	},
	{
		name:  "334ms accepted directly",
		limit: handshakeLimit,
		steps: concat(sixAt(0), []step{ok(334, 4998)}),
	},
	{
		// 3/s at whole milliseconds: gaps of 333, 333, 334 drain 999,
		// 999, 1002: the excess cycles 0, 1, 2, 0 and never refuses.
		name:  "steady 3/s passes forever",
		limit: handshakeLimit,
		steps: concat(
			[]step{ok(0, 0), ok(333, 1), ok(666, 2), ok(1000, 0), ok(1333, 1), ok(1666, 2), ok(2000, 0)},
			train(2333, 1000, 30, true),
		),
	},
	{
		// 4/s adds 1000 and drains 750 per request: +250 each, so the
		// 21st (t=5000, excess 5000) is the last of the climb; then 3
		// in 4 pass, as fast as 3r/s drains.
		name:  "steady 4/s fills the bucket, then 3 of 4 pass",
		limit: handshakeLimit,
		steps: concat(
			[]step{ok(0, 0), ok(250, 250), ok(500, 500), ok(750, 750), ok(1000, 1000)},
			train(1250, 250, 15, true),
			[]step{ok(5000, 5000), no(5250, 5000, 84), ok(5500, 4500), ok(5750, 4750), ok(6000, 5000), no(6250, 5000, 84), ok(6500, 4500)},
		),
	},
	{
		name:  "partial refill after one second",
		limit: handshakeLimit,
		steps: concat(sixAt(0), []step{ok(1000, 3000), ok(1000, 4000), ok(1000, 5000), no(1000, 5000, 334)}),
	},
	{
		name:  "long idle refills to rest",
		limit: handshakeLimit,
		steps: concat(sixAt(0), []step{no(0, 5000, 334)}, sixAt(3_600_000), []step{no(3_600_000, 5000, 334)}),
	},
	{
		// The bucket drains to rest after (5000+1000)/3 = 2000ms.
		name:  "just drained after 2s behaves like a new key",
		limit: handshakeLimit,
		steps: concat(sixAt(0), sixAt(2000), []step{no(2000, 5000, 334)}),
	},
	{
		// The clock goes back 1s: elapsed counts as 0, so nothing
		// drains (nginx would count 1s). Retry is measured from last.
		name:  "negative elapsed drains nothing",
		limit: handshakeLimit,
		steps: concat(sixAt(10_000), []step{no(9_000, 5000, 1334), no(9_999, 5000, 335), ok(10_334, 4998)}),
	},
	{
		// An accepted request at an earlier time becomes the new last.
		name:  "negative elapsed on an accepted request",
		limit: handshakeLimit,
		steps: []step{ok(10_000, 0), ok(9_500, 1000), ok(9_500, 2000), ok(9_500, 3000), ok(9_500, 4000), ok(9_500, 5000), no(9_500, 5000, 334), ok(9_834, 4998)},
	},
	{
		name:  "burst 0 at 1r/s",
		limit: Limit{Name: "one", Rate: 1000, Burst: 0},
		steps: []step{ok(0, 0), no(0, 0, 1000), no(999, 0, 1), ok(1000, 0), no(1500, 0, 500)},
	},
	{
		// 30r/m is 500: one request every 2s.
		name:  "30r/m burst 0",
		limit: Limit{Name: "slow", Rate: 500, Burst: 0},
		steps: []step{ok(0, 0), no(1999, 0, 1), ok(2000, 0), no(2001, 0, 1999)},
	},
	{
		// Room creation in the design: 2r/s burst 4, double clicks.
		name:  "2r/s burst 4",
		limit: Limit{Name: "rooms", Rate: 2000, Burst: 4},
		steps: []step{ok(0, 0), ok(0, 1000), ok(0, 2000), ok(0, 3000), ok(0, 4000), no(0, 4000, 500), no(499, 4000, 1), ok(500, 4000)},
	},
}

// t0 is the base of the timelines: a real-looking Unix time in ms.
var t0 = time.UnixMilli(1_763_000_000_000)

// replay runs tl through allow, which decides the request at atMs, and
// checks every step.
func replay(t *testing.T, tl timeline, allow func(atMs int64) (Result, error)) {
	t.Helper()
	for i, s := range tl.steps {
		r, err := allow(s.atMs)
		if err != nil {
			t.Fatalf("step %d: Allow(t0+%dms) error %v", i, s.atMs, err)
		}
		if r.Allowed != s.want {
			t.Fatalf("step %d: Allow(t0+%dms).Allowed = %v, want %v (result %+v)", i, s.atMs, r.Allowed, s.want, r)
		}
		if s.wantExcess >= 0 && r.Excess != s.wantExcess {
			t.Errorf("step %d: Allow(t0+%dms).Excess = %d, want %d", i, s.atMs, r.Excess, s.wantExcess)
		}
		if s.wantRetryMs >= 0 && r.RetryAfter != time.Duration(s.wantRetryMs)*time.Millisecond {
			t.Errorf("step %d: Allow(t0+%dms).RetryAfter = %v, want %dms", i, s.atMs, r.RetryAfter, s.wantRetryMs)
		}
		if !r.Allowed && r.RetryAfter < time.Millisecond {
			t.Errorf("step %d: refused with RetryAfter %v, want at least 1ms", i, r.RetryAfter)
		}
		if r.Allowed && r.RetryAfter != 0 {
			t.Errorf("step %d: allowed with RetryAfter %v, want 0", i, r.RetryAfter)
		}
	}
}

func TestTimelinesDecide(t *testing.T) {
	for _, tl := range timelines {
		t.Run(tl.name, func(t *testing.T) {
			t.Parallel()
			var b bucket
			fresh := true
			replay(t, tl, func(atMs int64) (Result, error) {
				nowMs := t0.UnixMilli() + atMs
				allowed, next, retry := decide(b, fresh, nowMs, tl.limit.Rate, tl.limit.Burst)
				if !allowed {
					if next != b {
						t.Errorf("refusal at t0+%dms changed the state from %+v to %+v", atMs, b, next)
					}
					checkRetryIsExact(t, b, nowMs, retry, tl.limit)
				}
				b, fresh = next, false
				return Result{Allowed: allowed, RetryAfter: time.Duration(retry) * time.Millisecond, Excess: next.excess}, nil
			})
		})
	}
}

// checkRetryIsExact checks that a request retry ms later passes and one
// 1ms earlier does not.
func checkRetryIsExact(t *testing.T, b bucket, nowMs, retry int64, l Limit) {
	t.Helper()
	if ok, _, _ := decide(b, false, nowMs+retry, l.Rate, l.Burst); !ok {
		t.Errorf("decide at now+RetryAfter (%dms) refused, want accepted", retry)
	}
	if retry > 1 {
		if ok, _, _ := decide(b, false, nowMs+retry-1, l.Rate, l.Burst); ok {
			t.Errorf("decide at now+RetryAfter-1ms (%dms) accepted, want refused: RetryAfter is not the shortest", retry-1)
		}
	}
}

func TestTimelinesMemoryStore(t *testing.T) {
	for _, tl := range timelines {
		t.Run(tl.name, func(t *testing.T) {
			t.Parallel()
			m, err := NewMemoryStore(MemoryConfig{})
			if err != nil {
				t.Fatal(err)
			}
			replay(t, tl, func(atMs int64) (Result, error) {
				r, err := m.AllowAt(t0.Add(time.Duration(atMs)*time.Millisecond), "192.0.2.1", tl.limit)
				if err == nil && r.Store != StoreMemory {
					t.Errorf("Store = %q, want %q", r.Store, StoreMemory)
				}
				return r, err
			})
		})
	}
}

func TestTimelinesRedisStore(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	for i, tl := range timelines {
		t.Run(tl.name, func(t *testing.T) {
			s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var nowMs int64
			s.nowMs = func() int64 { return nowMs }
			key := fmt.Sprintf("198.51.100.%d", i)
			replay(t, tl, func(atMs int64) (Result, error) {
				nowMs = t0.UnixMilli() + atMs
				r, err := s.Allow(context.Background(), key, tl.limit)
				if err == nil && r.Store != StoreRedis {
					t.Errorf("Store = %q, want %q", r.Store, StoreRedis)
				}
				return r, err
			})
		})
	}
}
