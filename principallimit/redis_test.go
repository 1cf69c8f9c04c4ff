package principallimit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// The script and the pre-check step by step: O optimistic frames pass
// unreported, the next one charges them with itself, and once Redis says
// the principal is over, the rest of the window is dropped in memory.
func TestLimiterRedisSteps(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	c := newClock()
	obs := newCountingObserver()
	l := newTestLimiter(t, Config{Limit: 10, Optimistic: 2, Redis: newTestRedisStore(t, srv.URL(), c), Observer: obs})
	lo, re := SourceLocal, SourceRedis
	ms := time.Millisecond
	run(t, l, c, l.Global(), []step{
		{0, "alice", 1, true, lo},
		{1 * ms, "alice", 1, true, lo},
		{2 * ms, "alice", 1, true, re}, // count 3
		{3 * ms, "alice", 1, true, lo},
		{4 * ms, "alice", 1, true, lo},
		{5 * ms, "alice", 1, true, re}, // count 6
		{6 * ms, "alice", 1, true, lo},
		{7 * ms, "alice", 1, true, lo},
		{8 * ms, "alice", 1, true, re}, // count 9
		{9 * ms, "alice", 1, true, lo},
		{10 * ms, "alice", 1, true, lo},
		{11 * ms, "alice", 1, false, re}, // 9+2 charged, the asking one refused: over
		{12 * ms, "alice", 1, false, lo},
		{999 * ms, "alice", 5, false, lo},
		{500 * ms, "bob", 3, true, re},      // more than O at once asks at once
		{time.Second, "alice", 1, true, lo}, // Redis' next window
	})
	if n := obs.roundTrips(); n != 5 {
		t.Errorf("round trips = %d, want 5", n)
	}
	key := l.cfg.Redis.key("alice", "")
	got, err := l.cfg.Redis.client.HGet(t.Context(), key, "c").Int()
	if err != nil || got != 11 {
		t.Errorf("count in Redis = %d, %v; want 11 (the refused frame uncounted)", got, err)
	}
	ttl := l.cfg.Redis.client.PTTL(t.Context(), key).Val()
	if ttl <= 0 || ttl > 2*time.Second {
		t.Errorf("key TTL = %v, want the window's rest and a second", ttl)
	}
}

// Two instances sharing one Redis hold one principal to its limit in
// total, within the documented overshoot, whatever the interleaving;
// another principal is not affected, and once both know the principal
// is over, its excess costs no round trip.
func TestTwoInstancesShareOneLimit(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	c := newClock()
	const limit, optimistic = 60, 6
	obs := [2]*countingObserver{newCountingObserver(), newCountingObserver()}
	var ls [2]*Limiter
	for i := range ls {
		ls[i] = newTestLimiter(t, Config{Limit: limit, Redis: newTestRedisStore(t, srv.URL(), c), Observer: obs[i]})
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed = map[string]int{}
	)
	for i := range 2 * 5 { // five sessions per instance
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ls[i%2]
			for range 200 {
				if l.AllowAt(t0.Add(time.Millisecond), "mallory", 1, l.Global()).Allowed {
					mu.Lock()
					passed["mallory"]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if p := passed["mallory"]; p < limit || p > limit+2*optimistic {
		t.Errorf("passed %d of 2000 frames on two instances, want between %d and %d", p, limit, limit+2*optimistic)
	}
	trips := obs[0].roundTrips() + obs[1].roundTrips()
	// Each round trip carries up to O+1 frames until the limit, and each
	// instance needs one more to learn the principal is over.
	if max := limit/(optimistic+1) + 1 + 2 + 2; trips > max {
		t.Errorf("round trips = %d for 2000 frames, want at most %d", trips, max)
	}
	for i, l := range ls {
		if d := l.AllowAt(t0.Add(2*time.Millisecond), "alice", 1, l.Global()); !d.Allowed {
			t.Errorf("instance %d: another principal refused: %+v", i, d)
		}
	}
}

// With Redis gone each instance holds the principal to the limit on its
// own frames; the probe ends fallback mode once Redis answers again.
func TestLimiterFallback(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	l := newTestLimiter(t, Config{Limit: 3, Optimistic: 1, Redis: newTestRedisStore(t, srv.URL(), nil), Observer: obs, RetryInterval: 50 * time.Millisecond})
	now := time.Now()
	if d := l.AllowAt(now, "alice", 2, l.Global()); d != (Decision{Allowed: true, Source: SourceRedis}) {
		t.Fatalf("redis up: %+v, want allowed by redis", d)
	}
	srv.Kill()
	// A new principal's first frames are optimistic; the next asks, finds
	// Redis refusing and falls back to this instance's count.
	run(t, l, nil, l.Global(), []step{
		{0, "bob", 1, true, SourceLocal},
		{1, "bob", 1, true, SourceMemory},
		{2, "bob", 1, true, SourceMemory},
		{3, "bob", 1, false, SourceMemory},
	})
	if !l.InFallback() {
		t.Fatal("InFallback() = false with Redis down")
	}
	srv.Restart()
	poll.Until(t, 10*time.Second, func() error {
		if l.InFallback() {
			return errors.New("still in fallback mode with Redis back")
		}
		return nil
	})
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.errs < 1 || fmt.Sprint(obs.fallback) != "[true false]" {
		t.Errorf("store errors %d, fallback %v; want at least 1 and [true false]", obs.errs, obs.fallback)
	}
}

// A Redis that hangs (paused) times charges out: the principal's window
// is then decided on this instance's count, with one timed-out round trip
// per window rather than one per frame.
func TestLimiterPausedRedis(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	s := newTestRedisStore(t, srv.URL(), nil)
	l := newTestLimiter(t, Config{Limit: 5, Optimistic: 1, Redis: s, Observer: obs})
	now := time.Now()
	if d := l.AllowAt(now, "warmup", 2, l.Global()); d.Source != SourceRedis {
		t.Fatalf("redis up: %+v, want decided by redis", d)
	}
	s.timeout = 100 * time.Millisecond
	srv.Pause()
	defer srv.Resume()
	before := obs.roundTrips()
	passed := 0
	for range 20 {
		if l.AllowAt(now, "carol", 1, l.Global()).Allowed {
			passed++
		}
	}
	if passed != 5 {
		t.Errorf("passed %d of 20 with Redis hung, want the limit, 5", passed)
	}
	if n := obs.roundTrips() - before; n != 1 {
		t.Errorf("round trips with Redis hung = %d, want 1 for the window", n)
	}
}
