package sessioncap

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// newJudgedLimiter is a fail-closed Limiter on srv whose acquires are
// bounded by timeout after a warm-up (the connection dialled and the
// script loaded with a second to spare, as the race detector may need),
// so that only a paused Redis makes them time out.
func newJudgedLimiter(t *testing.T, srv *testredis.Server, timeout time.Duration, timeoutsToFail int, confirm time.Duration, obs *countingObserver) *Limiter {
	t.Helper()
	client := newTestClient(t, srv.URL())
	if err := acquireScript.Load(t.Context(), client).Err(); err != nil {
		t.Fatal(err)
	}
	rs, err := NewRedisStore(RedisConfig{Client: client, Timeout: timeout, TimeoutsToFail: timeoutsToFail, Logger: slog.New(slog.DiscardHandler), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })
	l, err := New(Config{Redis: rs, FailClosed: true, ConfirmTimeout: confirm, RetryInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A call that times out while Redis is not judged failing says nothing
// about Redis: even failing closed, the instance's own count decides
// (Decision.Local) and fallback mode does not start.
func TestLimiterSlowCallDecidesLocally(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	l := newJudgedLimiter(t, srv, 100*time.Millisecond, 0, 0, obs)
	ctx := t.Context()
	if _, d, err := l.Acquire(ctx, ScopeIP, "ws:192.0.2.40", 2); err != nil || d != (Decision{Allowed: true, Store: StoreRedis}) {
		t.Fatalf("redis up: %+v, %v; want allowed by redis", d, err)
	}

	srv.Pause()
	lease, d, err := l.Acquire(ctx, ScopeIP, "ws:192.0.2.40", 2)
	srv.Resume()
	if err != nil || d != (Decision{Allowed: true, Held: 1, Store: StoreMemory, Local: true}) || !lease.Held() {
		t.Fatalf("one slow call, failing closed: %+v, %v; want allowed by memory (Local), the redis session counted", d, err)
	}
	if l.InFallback() {
		t.Fatal("InFallback() = true after one timed-out call, want false")
	}
	if n := l.Held(ScopeIP, "ws:192.0.2.40"); n != 2 {
		t.Errorf("instance's own count = %d, want 2", n)
	}
	if errs, _, fb := obs.snapshot(); errs != 1 || len(fb) != 0 {
		t.Errorf("store errors %d, fallback %v; want 1 and none", errs, fb)
	}
	if c := obs.confirmations(); len(c) != 0 {
		t.Errorf("confirmations %v after one timeout, want none", c)
	}
	l.Release(lease)
}

// Timeouts in a row start one confirmation PING, bounded by the longer
// ConfirmTimeout; a Redis that answers it (it was only slow) keeps the
// caps out of fallback mode, one that does not (hung) puts them in.
func TestLimiterConfirmsTimeouts(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	// A confirmation of a minute: the paused Redis resumes long before.
	l := newJudgedLimiter(t, srv, 100*time.Millisecond, 2, time.Minute, obs)
	ctx := t.Context()

	srv.Pause()
	for i := range 2 {
		if _, d, err := l.Acquire(ctx, ScopeIP, fmt.Sprintf("ws:192.0.2.%d", 50+i), 5); err != nil || !d.Local || !d.Allowed {
			t.Fatalf("paused, acquire %d: %+v, %v; want allowed locally", i+1, d, err)
		}
	}
	if l.InFallback() {
		t.Fatal("InFallback() = true on timeouts alone, want a confirmation first")
	}
	srv.Resume()
	poll.Until(t, 30*time.Second, func() error {
		if c := obs.confirmations(); len(c) != 1 {
			return fmt.Errorf("confirmations %v, want one", c)
		}
		return nil
	})
	if c := obs.confirmations(); !c[0] || l.InFallback() {
		t.Fatalf("Redis resumed: confirmations %v, InFallback %v; want [true], false", c, l.InFallback())
	}
	if _, d, err := l.Acquire(ctx, ScopeIP, "ws:192.0.2.52", 5); err != nil || d.Store != StoreRedis {
		t.Fatalf("after the confirmation: %+v, %v; want decided by redis", d, err)
	}

	// Hung for good: the confirmation fails and, failing closed, the caps
	// refuse.
	hung := newJudgedLimiter(t, srv, 100*time.Millisecond, 2, 200*time.Millisecond, obs)
	srv.Pause()
	defer srv.Resume()
	for i := range 2 {
		_, _, _ = hung.Acquire(ctx, ScopeIP, fmt.Sprintf("ws:192.0.2.%d", 60+i), 5)
	}
	poll.Until(t, 30*time.Second, func() error {
		if !hung.InFallback() {
			return errors.New("not in fallback mode with Redis hung")
		}
		return nil
	})
	if c := obs.confirmations(); len(c) != 2 || c[1] {
		t.Errorf("confirmations %v, want [true false]", c)
	}
	if _, d, _ := hung.Acquire(ctx, ScopeIP, "ws:192.0.2.62", 5); d != (Decision{Store: StoreNone}) {
		t.Errorf("hung, failing closed: %+v, want refused by none", d)
	}
}

// A Redis that is down (refusing connections) is evidence at once: no
// confirmation, fallback mode, and failing closed a refusal.
func TestLimiterStoppedRedisEntersFallback(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	l := newJudgedLimiter(t, srv, 100*time.Millisecond, 0, 0, obs)
	srv.Kill()
	_, d, err := l.Acquire(t.Context(), ScopeIP, "ws:192.0.2.70", 5)
	if err != nil || d != (Decision{Store: StoreNone}) || !l.InFallback() {
		t.Fatalf("redis stopped: %+v, %v, InFallback %v; want refused by none in fallback mode", d, err, l.InFallback())
	}
	if c := obs.confirmations(); len(c) != 0 {
		t.Errorf("confirmations %v, want none: a refused connection needs none", c)
	}
}
