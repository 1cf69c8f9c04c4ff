package handshake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/syncbuf"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
)

// recorder is an Observer that remembers what it was told.
type recorder struct {
	mu        sync.Mutex
	decisions []Result
	errs      []string
	fallback  []bool
	confirmed []bool
}

func (r *recorder) Decision(res Result, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, res)
}

func (r *recorder) StoreError(store string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, store)
}

func (r *recorder) Fallback(active bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = append(r.fallback, active)
}

func (r *recorder) Confirmation(answered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.confirmed = append(r.confirmed, answered)
}

func (r *recorder) confirmations() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.confirmed...)
}

func (r *recorder) counts() (decisions, errs int, fallback []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.decisions), len(r.errs), append([]bool(nil), r.fallback...)
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestNewLimiterConfig(t *testing.T) {
	if _, err := New(Config{RetryInterval: -time.Second}); err == nil || err.Error() != "handshake: Config.RetryInterval -1s is negative" {
		t.Errorf("New with negative RetryInterval error = %v, want it named", err)
	}
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Allow(t.Context(), "192.0.2.1", handshakeLimit)
	if err != nil || !r.Allowed || r.Store != StoreMemory {
		t.Errorf("zero Config Allow = %+v, %v; want allowed by memory", r, err)
	}
	if l.InFallback() {
		t.Error("InFallback() = true without Redis, want false")
	}
	if _, err := l.Allow(t.Context(), "", handshakeLimit); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Allow with empty key error = %v, want ErrEmptyKey", err)
	}
	if _, err := l.Allow(t.Context(), "k", Limit{}); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("Allow with zero Limit error = %v, want ErrInvalidLimit", err)
	}
}

// newFallbackLimiter returns a Limiter on a real Redis with a fake clock,
// an observer and a captured log. Its background probe is off, so that
// only the test's requests, at the fake clock's instants, try Redis.
func newFallbackLimiter(t *testing.T, failClosed bool) (*Limiter, *testredis.Server, *fakeClock, *recorder, *syncbuf.Buffer) {
	t.Helper()
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	// A second, not the 50 ms default: the first decision dials and loads
	// the script, which a machine busy with the race detector can take
	// longer than 50 ms to do. A killed server refuses at once anyway.
	rs, err := NewRedisStore(RedisConfig{Client: client, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: t0}
	rec := &recorder{}
	logs := &syncbuf.Buffer{}
	l, err := New(Config{
		Redis:         rs,
		FailClosed:    failClosed,
		ProbeInterval: -1,
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
		Observer:      rec,
		Now:           clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l, srv, clock, rec, logs
}

func TestLimiterFallbackAndRecovery(t *testing.T) {
	l, srv, clock, rec, logs := newFallbackLimiter(t, false)
	ctx := t.Context()
	allow := func(step string) Result {
		t.Helper()
		r, err := l.Allow(ctx, "192.0.2.20", handshakeLimit)
		if err != nil {
			t.Fatalf("%s: Allow error %v, want a decision", step, err)
		}
		return r
	}

	if r := allow("redis up"); !r.Allowed || r.Store != StoreRedis {
		t.Fatalf("redis up: %+v, want allowed by redis", r)
	}

	srv.Kill()
	// Every call returns a decision (bounded by the Redis timeout)
	// made in memory.
	for i := range 3 {
		if r := allow("redis killed"); r.Store != StoreMemory || !r.Allowed {
			t.Fatalf("redis killed, request %d: %+v, want allowed by memory", i, r)
		}
	}
	if !l.InFallback() {
		t.Fatal("InFallback() = false after Redis died, want true")
	}
	_, errs, fb := rec.counts()
	if errs != 1 {
		t.Errorf("StoreError calls = %d, want 1 (no Redis call between probes)", errs)
	}
	if len(fb) != 1 || !fb[0] {
		t.Errorf("Fallback calls = %v, want [true]", fb)
	}

	// Next probe, Redis still down: one more error, still one Warn.
	clock.Advance(DefaultRetryInterval)
	if r := allow("probe fails"); r.Store != StoreMemory {
		t.Fatalf("probe fails: %+v, want memory", r)
	}
	if _, errs, _ := rec.counts(); errs != 2 {
		t.Errorf("StoreError calls after a failed probe = %d, want 2", errs)
	}
	if n := strings.Count(logs.String(), "entering fallback mode"); n != 1 {
		t.Errorf("fallback Warn logged %d times, want 1:\n%s", n, logs.String())
	}

	srv.Restart()
	// Before RetryInterval has passed, Redis is not tried.
	if r := allow("restarted, before probe"); r.Store != StoreMemory {
		t.Errorf("before the probe interval: Store %q, want memory", r.Store)
	}
	clock.Advance(DefaultRetryInterval)
	if r := allow("restarted, probe"); r.Store != StoreRedis || !r.Allowed {
		t.Fatalf("after restart and interval: %+v, want allowed by redis", r)
	}
	if l.InFallback() {
		t.Error("InFallback() = true after Redis answered, want false")
	}
	if _, _, fb := rec.counts(); len(fb) != 2 || fb[1] {
		t.Errorf("Fallback calls = %v, want [true false]", fb)
	}
	if !strings.Contains(logs.String(), "leaving fallback mode") {
		t.Errorf("no Info on leaving fallback mode:\n%s", logs.String())
	}
	if r := allow("redis back"); r.Store != StoreRedis {
		t.Errorf("redis back: Store %q, want redis", r.Store)
	}
	if d, _, _ := rec.counts(); d != 8 {
		t.Errorf("Decision calls = %d, want 8", d)
	}
}

func TestLimiterFailClosed(t *testing.T) {
	l, srv, _, _, _ := newFallbackLimiter(t, true)
	srv.Kill()
	for i := range 3 {
		r, err := l.Allow(t.Context(), "192.0.2.21", handshakeLimit)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed || r.Store != StoreNone || r.RetryAfter != time.Second {
			t.Errorf("fail closed, request %d: %+v, want refused by none with RetryAfter 1s", i, r)
		}
	}
}

// A caller whose context ends is not a Redis failure.
func TestLimiterCallerCancel(t *testing.T) {
	l, _, _, rec, _ := newFallbackLimiter(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Allow(ctx, "192.0.2.22", handshakeLimit); !errors.Is(err, context.Canceled) {
		t.Errorf("Allow with canceled context error = %v, want context.Canceled", err)
	}
	if l.InFallback() {
		t.Error("InFallback() = true after a caller cancel, want false")
	}
	if _, errs, _ := rec.counts(); errs != 0 {
		t.Errorf("StoreError calls = %d, want 0", errs)
	}
}

// A ban through the Limiter holds in Redis and, after Redis dies, in memory.
func TestLimiterBan(t *testing.T) {
	l, srv, _, _, _ := newFallbackLimiter(t, false)
	ctx := t.Context()
	if err := l.Ban(ctx, "192.0.2.23", time.Hour); err != nil {
		t.Fatal(err)
	}
	r, err := l.Allow(ctx, "192.0.2.23", handshakeLimit)
	if err != nil || !r.Banned || r.Store != StoreRedis {
		t.Fatalf("banned via redis = %+v, %v; want Banned by redis", r, err)
	}
	srv.Kill()
	// Redis's refusal still holds: shed without asking.
	r, err = l.Allow(ctx, "192.0.2.23", handshakeLimit)
	if err != nil || !r.Banned || r.Store != StoreLocal || r.Local != LocalRefused {
		t.Fatalf("banned, Redis refusal remembered = %+v, %v; want Banned, shed as refused", r, err)
	}
	if _, err := l.Allow(ctx, "192.0.2.25", handshakeLimit); err != nil || !l.InFallback() {
		t.Fatalf("another key with Redis down: %v, fallback %v; want fallback mode", err, l.InFallback())
	}
	r, err = l.Allow(ctx, "192.0.2.23", handshakeLimit)
	if err != nil || !r.Banned || r.Store != StoreMemory {
		t.Fatalf("banned in fallback = %+v, %v; want Banned by memory", r, err)
	}
	if err := l.Ban(ctx, "192.0.2.24", time.Hour); err == nil {
		t.Error("Ban with Redis down error = nil, want the Redis error")
	}
	if r, _ := l.Allow(ctx, "192.0.2.24", handshakeLimit); !r.Banned {
		t.Errorf("ban made while Redis is down = %+v, want held in memory", r)
	}
}

// Banned asks Redis while it answers and memory once it is down, with
// Allow's fallback bookkeeping, and never refuses for lack of an answer,
// fail closed or not.
func TestLimiterBanned(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		t.Run(fmt.Sprintf("FailClosed=%v", failClosed), func(t *testing.T) {
			l, srv, clock, rec, _ := newFallbackLimiter(t, failClosed)
			ctx := t.Context()
			banned := func(step, key string, want bool) {
				t.Helper()
				d, got, err := l.Banned(ctx, key)
				if err != nil {
					t.Fatalf("%s: Banned(%q) error %v, want an answer", step, key, err)
				}
				if got != want || (got && (d <= 0 || d > time.Hour)) || (!got && d != 0) {
					t.Errorf("%s: Banned(%q) = %v, %v; want %v", step, key, d, got, want)
				}
			}
			// Through the Limiter: in Redis and in memory.
			if err := l.Ban(ctx, "principal:mallory", time.Hour); err != nil {
				t.Fatal(err)
			}
			// By another instance: in Redis only.
			if err := l.redis.Ban(ctx, "principal:trudy", time.Hour); err != nil {
				t.Fatal(err)
			}
			banned("redis up", "principal:mallory", true)
			banned("redis up", "principal:trudy", true)
			banned("redis up", "principal:alice", false)

			srv.Kill()
			banned("redis killed", "principal:mallory", true)
			if !l.InFallback() {
				t.Fatal("InFallback() = false after a failed ban check, want true")
			}
			banned("redis killed", "principal:trudy", false)
			banned("redis killed", "principal:alice", false)
			d, errs, fb := rec.counts()
			if errs != 1 || len(fb) != 1 || !fb[0] {
				t.Errorf("redis killed: StoreError calls %d, Fallback calls %v; want 1 and [true]", errs, fb)
			}
			if d != 0 {
				t.Errorf("Decision calls = %d, want 0: a ban check decides no request", d)
			}

			// The restarted Redis is empty; another instance bans again.
			srv.Restart()
			if err := l.redis.Ban(ctx, "principal:trudy", time.Hour); err != nil {
				t.Fatal(err)
			}
			banned("restarted, before probe", "principal:trudy", false)
			clock.Advance(DefaultRetryInterval)
			banned("restarted, probe", "principal:trudy", true)
			if l.InFallback() {
				t.Error("InFallback() = true after Redis answered a ban check, want false")
			}
		})
	}
}

func TestLimiterBannedInput(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, _, err := l.Banned(ctx, ""); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Banned with empty key error = %v, want ErrEmptyKey", err)
	}
	if err := l.Ban(ctx, "principal:mallory", time.Minute); err != nil {
		t.Fatal(err)
	}
	if d, banned, err := l.Banned(ctx, "principal:mallory"); err != nil || !banned || d <= 0 || d > time.Minute {
		t.Errorf("Banned without Redis = %v, %v, %v; want banned from memory for (0, 1m]", d, banned, err)
	}

	rl, _, _, rec, _ := newFallbackLimiter(t, false)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := rl.Banned(cctx, "principal:mallory"); !errors.Is(err, context.Canceled) {
		t.Errorf("Banned with canceled context error = %v, want context.Canceled", err)
	}
	if _, errs, _ := rec.counts(); errs != 0 || rl.InFallback() {
		t.Errorf("after a caller cancel: StoreError calls %d, InFallback %v; want 0, false", errs, rl.InFallback())
	}
}

// A Redis that accepts connections but never answers must not hold a
// handshake: the per-call timeout ends the call and memory decides.
func TestLimiterHungRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	client := newTestClient(t, "redis://"+ln.Addr().String()+"/0")
	rs, err := NewRedisStore(RedisConfig{Client: client, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	l, err := New(Config{Redis: rs, Logger: slog.New(slog.DiscardHandler), Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	type answer struct {
		r   Result
		err error
	}
	// One round trip that times out may be this server's CPU, not Redis:
	// decided in memory without fallback mode. DefaultTimeoutsToFail in a
	// row start a PING within ConfirmTimeout, which the hung Redis does
	// not answer either: only then does fallback mode start.
	for i := range DefaultTimeoutsToFail {
		done := make(chan answer, 1)
		go func() {
			// A key of its own each time: Memory answers only keys it
			// holds no state for.
			r, err := l.Allow(context.Background(), "192.0.2."+strconv.Itoa(25+i), handshakeLimit)
			done <- answer{r, err}
		}()
		select {
		case a := <-done:
			if a.err != nil || a.r.Store != StoreMemory || !a.r.Allowed || a.r.Local != LocalTimeout {
				t.Errorf("hung Redis, request %d: %+v, %v; want allowed by memory, Local %q", i, a.r, a.err, LocalTimeout)
			}
			if i < DefaultTimeoutsToFail-1 && l.InFallback() {
				t.Errorf("hung Redis, after %d timeouts: InFallback() = true, want false", i+1)
			}
		case <-time.After(30 * time.Second):
			// Not a timing assertion: a liveness guard so a regression
			// fails instead of hanging the test binary.
			t.Fatal("Allow did not return with Redis hung")
		}
	}
	poll.Until(t, 30*time.Second, func() error {
		if !l.InFallback() {
			return errors.New("not in fallback mode with Redis hung")
		}
		return nil
	})
	if got := fmt.Sprint(rec.confirmations()); got != "[false]" {
		t.Errorf("confirmations = %s, want [false]", got)
	}
}

// The fallback gauge returns to 0 with no request arriving: the
// background probe finds Redis back and leaves fallback mode by itself.
func TestLimiterBackgroundProbe(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	rs, err := NewRedisStore(RedisConfig{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	l, err := New(Config{
		Redis:         rs,
		RetryInterval: 20 * time.Millisecond,
		Logger:        slog.New(slog.DiscardHandler),
		Observer:      rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	srv.Kill()
	if r, err := l.Allow(t.Context(), "192.0.2.30", handshakeLimit); err != nil || r.Store != StoreMemory {
		t.Fatalf("redis killed: %+v, %v; want a decision by memory", r, err)
	}
	if !l.InFallback() {
		t.Fatal("InFallback() = false after Redis died, want true")
	}
	// Still down: the probe keeps failing and counting store errors,
	// and the Limiter stays in fallback mode.
	poll.Until(t, 10*time.Second, func() error {
		if _, errs, _ := rec.counts(); errs < 3 {
			return fmt.Errorf("StoreError calls = %d, want the probe to have failed at least twice", errs)
		}
		return nil
	})
	if !l.InFallback() {
		t.Fatal("InFallback() = false with Redis still down, want true")
	}

	srv.Restart()
	// No request from here on.
	poll.Until(t, 10*time.Second, func() error {
		if l.InFallback() {
			return errors.New("still in fallback mode with Redis back and no request")
		}
		return nil
	})
	if _, _, fb := rec.counts(); len(fb) != 2 || !fb[0] || fb[1] {
		t.Errorf("Fallback calls = %v, want [true false]", fb)
	}
	// The probe has ended with fallback mode; Close finds nothing to wait
	// for, and a second Close is harmless.
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// Close stops a probe that is still running because Redis never came
// back, and the Limiter keeps deciding afterwards.
func TestLimiterCloseStopsProbe(t *testing.T) {
	l, err := New(Config{Redis: mustRedisStore(t, "redis://127.0.0.1:1/0"), RetryInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(t.Context(), "192.0.2.31", handshakeLimit); err != nil {
		t.Fatal(err)
	}
	if !l.InFallback() {
		t.Fatal("InFallback() = false with no Redis listening, want true")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	// goleak in TestMain fails the package if the probe outlived Close.
	if r, err := l.Allow(t.Context(), "192.0.2.31", handshakeLimit); err != nil || r.Store != StoreMemory {
		t.Errorf("Allow after Close = %+v, %v; want a decision by memory", r, err)
	}
}

// mustRedisStore is a RedisStore on a client for url.
func mustRedisStore(t *testing.T, url string) *RedisStore {
	t.Helper()
	rs, err := NewRedisStore(RedisConfig{Client: newTestClient(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestResultHandshake(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		r    Result
		want *outcome.Handshake
	}{
		{Result{Allowed: true, Store: StoreRedis}, nil},
		{Result{Store: StoreRedis}, outcome.HandshakeRejectedLimit},
		{Result{Store: StoreLocal}, outcome.HandshakeRejectedLimit},
		{Result{Store: StoreMemory, Banned: true}, outcome.HandshakeRejectedBan},
		{Result{Store: StoreNone}, outcome.HandshakeStoreError},
	} {
		if got := tt.r.Handshake(); got != tt.want {
			t.Errorf("%+v.Handshake() = %v, want %v", tt.r, got, tt.want)
		}
	}
}
