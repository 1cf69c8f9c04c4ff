package handshake

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// TestShedTable steps one key through a refusal and its in-flight bound
// at fixed instants.
func TestShedTable(t *testing.T) {
	tb := newShedTable(100, 0)
	const key = "192.0.2.40"
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	// Burst+1 (6) decisions may be on their way; the seventh is shed.
	for i := range handshakeLimit.Burst + 1 {
		if _, shed, tracked := tb.acquire(key, handshakeLimit, at(0)); shed || !tracked {
			t.Fatalf("acquire %d at t0 = shed %v tracked %v, want let through and tracked", i, shed, tracked)
		}
	}
	r, shed, _ := tb.acquire(key, handshakeLimit, at(0))
	if !shed || r.Allowed || r.Store != StoreLocal || r.Local != LocalInFlight || r.RetryAfter != 334*time.Millisecond {
		t.Fatalf("acquire beyond Burst+1 = %+v shed %v, want shed in_flight, RetryAfter 334ms (one drip at 3r/s)", r, shed)
	}
	// Redis refuses one with RetryAfter 300ms: refused locally until
	// 299ms after the decision started, and not after.
	tb.release(key, at(0), Result{RetryAfter: 300 * time.Millisecond, Store: StoreRedis}, nil)
	for range handshakeLimit.Burst {
		tb.release(key, at(0), Result{Allowed: true, Store: StoreRedis}, nil)
	}
	for _, step := range []struct {
		ms        int
		wantShed  bool
		wantRetry time.Duration
	}{
		{1, true, 298 * time.Millisecond},
		{298, true, time.Millisecond},
		{299, false, 0},
	} {
		r, shed, tracked := tb.acquire(key, handshakeLimit, at(step.ms))
		if shed != step.wantShed || (shed && (r.Local != LocalRefused || r.RetryAfter != step.wantRetry)) {
			t.Errorf("acquire(t0+%dms) = %+v shed %v, want shed %v RetryAfter %v", step.ms, r, shed, step.wantShed, step.wantRetry)
		}
		if tracked {
			tb.release(key, at(step.ms), Result{}, errNotAsked)
		}
	}
	if n := len(tb.shard(key).keys); n != 0 {
		t.Errorf("%d keys kept after the refusal ended with nothing in flight, want 0", n)
	}

	// A ban is remembered as one and forgotten when lifted.
	tb.acquire(key, handshakeLimit, at(1000))
	tb.release(key, at(1000), Result{RetryAfter: time.Hour, Store: StoreRedis, Banned: true}, nil)
	if r, shed, _ := tb.acquire(key, handshakeLimit, at(2000)); !shed || !r.Banned {
		t.Errorf("after a ban: %+v shed %v, want shed as banned", r, shed)
	}
	tb.forget(key)
	if _, shed, _ := tb.acquire(key, handshakeLimit, at(2000)); shed {
		t.Errorf("after the ban was lifted: shed, want let through")
	}
	// Failures and memory answers leave no refusal behind.
	tb.release(key, at(2000), Result{RetryAfter: time.Second, Store: StoreMemory}, nil)
	if _, shed, _ := tb.acquire(key, handshakeLimit, at(2001)); shed {
		t.Errorf("after a memory refusal: shed, want let through")
	}
}

// TestShedTableBounded: a full table tracks no new key until a sweep
// finds room, and MaxInFlightPerKey negative never sheds for in-flight.
func TestShedTableBounded(t *testing.T) {
	tb := newShedTable(shedShards, -1) // one key per shard
	var keys []string
	for i := 0; len(keys) < 2; i++ {
		k := "198.51.100." + strconv.Itoa(i)
		if tb.shard(k) == tb.shard("198.51.100.0") {
			keys = append(keys, k)
		}
	}
	now := t0.Add(time.Hour)
	for range 100 {
		if _, shed, _ := tb.acquire(keys[0], handshakeLimit, now); shed {
			t.Fatal("shed with MaxInFlightPerKey negative, want never for in-flight")
		}
	}
	if _, shed, tracked := tb.acquire(keys[1], handshakeLimit, now); shed || tracked {
		t.Fatalf("second key in a full shard: shed %v tracked %v, want let through untracked", shed, tracked)
	}
	for range 100 {
		tb.release(keys[0], now, Result{Allowed: true, Store: StoreRedis}, nil)
	}
	if _, _, tracked := tb.acquire(keys[1], handshakeLimit, now.Add(shedSweepEvery)); !tracked {
		t.Errorf("after the first key left: untracked, want tracked")
	}
}

// TestLimiterShedsOneKeysFlood runs 2,000 concurrent decisions for one
// key against a real Redis: Redis admits Burst+1 (nothing drains within a
// second), shedding answers most of the others without asking it, every
// refusal is one Redis would also give, and another key is still decided
// by Redis meanwhile.
func TestLimiterShedsOneKeysFlood(t *testing.T) {
	srv := testredis.Start(t)
	rs, err := NewRedisStore(RedisConfig{Client: newTestClient(t, srv.URL()), Timeout: 5 * time.Second, MaxQueueWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	l, err := New(Config{Redis: rs, ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	slow := Limit{Name: "flood", Rate: 1, Burst: 5} // one request per 1000 s
	const n = 2000
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			r, err := l.Allow(context.Background(), "203.0.113.50", slow)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				counts["error "+err.Error()]++
			case r.Allowed:
				counts["allowed "+r.Store]++
			default:
				counts["refused "+r.Store+" "+r.Local]++
			}
		})
	}
	other, err := l.Allow(context.Background(), "203.0.113.51", slow)
	wg.Wait()
	if err != nil || !other.Allowed || other.Store != StoreRedis {
		t.Errorf("another key during the flood = %+v, %v; want allowed by redis", other, err)
	}
	t.Logf("outcomes: %v; pipeline %+v", counts, rs.PipelineStats())
	if got := counts["allowed redis"]; got != slow.Burst+1 {
		t.Errorf("allowed by redis %d, want Burst+1 = %d (all: %v)", got, slow.Burst+1, counts)
	}
	shed := counts["refused local "+LocalInFlight] + counts["refused local "+LocalRefused]
	if shed+counts["refused redis "]+slow.Burst+1 != n {
		t.Errorf("outcomes %v: want only Redis answers and shed refusals", counts)
	}
	if sent := rs.PipelineStats().Decisions; sent > n/2 {
		t.Errorf("%d of %d decisions sent to Redis, want most shed", sent, n)
	}
	if l.InFallback() {
		t.Error("InFallback() = true after one key's flood, want false")
	}
}

// TestRedisStoreQueueWait: a decision that waited MaxQueueWait behind a
// held pipeline is not sent, fails with ErrQueueWait, and says nothing
// about Redis.
func TestRedisStoreQueueWait(t *testing.T) {
	s, g := gatedStore(t, nil, RedisConfig{MaxQueueWait: time.Millisecond})
	first := allowAsync(t.Context(), s, "a", handshakeLimit)
	g.waitHeld(t)
	queued := allowAsync(t.Context(), s, "b", handshakeLimit)
	waitQueued(t, s, 1)
	time.Sleep(5 * time.Millisecond) // past MaxQueueWait: a state to reach, not a duration asserted
	g.release <- nil
	if o := <-first; o.err != nil || !o.r.Allowed {
		t.Errorf("held decision = %+v, %v; want allowed", o.r, o.err)
	}
	if o := <-queued; !errors.Is(o.err, ErrQueueWait) {
		t.Errorf("decision past MaxQueueWait = %+v, %v; want ErrQueueWait", o.r, o.err)
	}
	if st := s.PipelineStats(); st.QueueWait != 1 || st.Decisions != 1 {
		t.Errorf("PipelineStats = %+v, want QueueWait 1 and one decision sent", st)
	}
	if s.health.Failing() {
		t.Error("health.Failing() = true after a queue wait, want false")
	}
}
