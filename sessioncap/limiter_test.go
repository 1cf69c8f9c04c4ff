package sessioncap

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
)

// newTestLimiter is a Limiter on the Redis at url (none when empty),
// closed when the test ends.
func newTestLimiter(t *testing.T, url string, failClosed bool, obs *countingObserver) *Limiter {
	t.Helper()
	cfg := Config{FailClosed: failClosed, RetryInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	rcfg := RedisConfig{Logger: cfg.Logger}
	if obs != nil {
		cfg.Observer, rcfg.Observer = obs, obs
	}
	if url != "" {
		cfg.Redis = newTestRedisStore(t, url, rcfg)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestLimiterMemoryOnly(t *testing.T) {
	t.Parallel()
	obs := newCountingObserver()
	l := newTestLimiter(t, "", false, obs)
	ctx := t.Context()
	var leases []Lease
	for i := range 3 {
		lease, d, err := l.Acquire(ctx, ScopePrincipal, "alice", 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Decision{Allowed: i < 2, Held: min(i, 2), Store: StoreMemory}); d != want {
			t.Fatalf("acquire %d = %+v, want %+v", i+1, d, want)
		}
		if lease.Held() != d.Allowed {
			t.Fatalf("acquire %d: Lease.Held() = %v with Allowed %v", i+1, lease.Held(), d.Allowed)
		}
		leases = append(leases, lease)
	}
	for _, lease := range leases {
		l.Release(lease) // the refused, zero Lease included: a no-op
	}
	if n := l.Held(ScopePrincipal, "alice"); n != 0 {
		t.Errorf("Held after releasing = %d, want 0", n)
	}
	if got := obs.released[ScopePrincipal]; got != 2 {
		t.Errorf("Released calls = %d, want 2", got)
	}
	if _, _, err := l.Acquire(ctx, ScopeIP, "", 1); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Acquire with empty name = %v, want ErrEmptyKey", err)
	}
	if _, _, err := l.Acquire(ctx, ScopeIP, "x", 0); !errors.Is(err, ErrInvalidMax) {
		t.Errorf("Acquire with max 0 = %v, want ErrInvalidMax", err)
	}
	if _, err := New(Config{RetryInterval: -1}); err == nil || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New with negative RetryInterval = %v, want ErrInvalidConfig", err)
	}
}

// With Redis down and failing open, the instance's own count decides, and
// it includes the sessions Redis admitted before the outage; the
// background probe leaves fallback mode once Redis is back, with no
// acquire arriving.
func TestLimiterFallbackOpen(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	l := newTestLimiter(t, srv.URL(), false, obs)
	ctx := t.Context()

	redisLease, d, err := l.Acquire(ctx, ScopeIP, "ws:192.0.2.9", 2)
	if err != nil || d != (Decision{Allowed: true, Held: 0, Store: StoreRedis}) {
		t.Fatalf("redis up: %+v, %v; want allowed by redis", d, err)
	}
	srv.Kill()
	_, d, err = l.Acquire(ctx, ScopeIP, "ws:192.0.2.9", 2)
	if err != nil || d != (Decision{Allowed: true, Held: 1, Store: StoreMemory}) {
		t.Fatalf("redis down: %+v, %v; want allowed by memory with the redis session counted", d, err)
	}
	if !l.InFallback() {
		t.Fatal("InFallback() = false with Redis down")
	}
	if _, d, _ = l.Acquire(ctx, ScopeIP, "ws:192.0.2.9", 2); d.Allowed || d.Store != StoreMemory {
		t.Fatalf("redis down, over the cap: %+v, want refused by memory", d)
	}
	// Releasing a Redis lease while Redis is down is counted, not fatal.
	l.Release(redisLease)
	if n := l.Held(ScopeIP, "ws:192.0.2.9"); n != 1 {
		t.Errorf("Held after the release = %d, want 1", n)
	}

	srv.Restart()
	poll.Until(t, 10*time.Second, func() error {
		if l.InFallback() {
			return errors.New("still in fallback mode with Redis back and no acquire")
		}
		return nil
	})
	if errs, _, fb := obs.snapshot(); errs < 2 || fmt.Sprint(fb) != "[true false]" {
		t.Errorf("store errors %d, fallback %v; want at least 2 and [true false]", errs, fb)
	}
}

func TestLimiterFailClosed(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	l := newTestLimiter(t, srv.URL(), true, newCountingObserver())
	srv.Kill()
	for i := range 2 {
		lease, d, err := l.Acquire(t.Context(), ScopeIP, "ws:192.0.2.10", 5)
		if err != nil || d != (Decision{Store: StoreNone}) || lease.Held() {
			t.Errorf("fail closed, acquire %d: %+v, %v; want refused by none", i+1, d, err)
		}
	}
}

func TestDecisionHandshake(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		d    Decision
		want *outcome.Handshake
	}{
		{Decision{Allowed: true, Store: StoreRedis}, nil},
		{Decision{Store: StoreRedis}, outcome.HandshakeRejectedSessionCap},
		{Decision{Store: StoreMemory}, outcome.HandshakeRejectedSessionCap},
		{Decision{Store: StoreNone}, outcome.HandshakeStoreError},
	} {
		if got := tt.d.Handshake(); got != tt.want {
			t.Errorf("%+v.Handshake() = %v, want %v", tt.d, got, tt.want)
		}
	}
}
