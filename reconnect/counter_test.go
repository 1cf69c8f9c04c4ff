package reconnect

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	counted  map[string]int // scope/store
	banned   map[string]int
	errs     int
	fallback []bool
}

func newRecorder() *recorder {
	return &recorder{counted: map[string]int{}, banned: map[string]int{}}
}

func (r *recorder) Counted(scope, store string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counted[scope+"/"+store]++
}

func (r *recorder) Banned(scope string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.banned[scope]++
}

func (r *recorder) StoreError(error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs++
}

func (r *recorder) Fallback(active bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fallback = append(r.fallback, active)
}

func (r *recorder) get(f func(*recorder) int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return f(r)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Limit: -1},
		{Window: -time.Second},
		{Window: time.Microsecond},
		{RetryInterval: -1},
		{ConfirmTimeout: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	c := newTestCounter(t, Config{})
	if c.Limit() != DefaultLimit || c.Window() != DefaultWindow {
		t.Errorf("zero Config: Limit %d, Window %v; want %d, %v", c.Limit(), c.Window(), DefaultLimit, DefaultWindow)
	}
	if _, err := c.Count(context.Background(), ScopeAddress, "", t0); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Count of an empty key = %v, want ErrEmptyKey", err)
	}
}

// The zero Config counts in memory: the 16th CONNECT of a minute is over,
// and the window that starts after it is not.
func TestCounterMemory(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	c := newTestCounter(t, Config{Observer: rec})
	ctx := context.Background()
	for i := 1; i <= 16; i++ {
		got, err := c.Count(ctx, ScopeAddress, "10.0.0.1", t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want := Count{N: i, Over: i > 15, Store: StoreMemory}
		if got != want {
			t.Fatalf("CONNECT %d: Count = %+v, want %+v", i, got, want)
		}
	}
	// Another scope with the same name counts apart.
	if got, _ := c.Count(ctx, ScopePrincipal, "10.0.0.1", t0.Add(20*time.Second)); got.N != 1 {
		t.Errorf("principal \"10.0.0.1\" counts %d, want 1 (apart from the address)", got.N)
	}
	if got, _ := c.Count(ctx, ScopeAddress, "10.0.0.1", t0.Add(time.Second+time.Minute)); got.N != 1 || got.Over {
		t.Errorf("first CONNECT of the next window: %+v, want N 1, not over", got)
	}
	if got := rec.get(func(r *recorder) int { return r.counted["address/memory"] }); got != 17 {
		t.Errorf("Counted(address, memory) %d times, want 17", got)
	}
}

// Two Counters on one Redis (two instances) share a key's count; each
// also counts its own share in memory.
func TestCounterRedisShared(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	var cs [2]*Counter
	recs := [2]*recorder{newRecorder(), newRecorder()}
	for i := range cs {
		store, _ := newTestRedisStore(t, rs.URL())
		cs[i] = newTestCounter(t, Config{Limit: 3, Redis: store, Observer: recs[i]})
	}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		got, err := cs[i%2].Count(ctx, ScopePrincipal, "alice", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if want := (Count{N: i, Over: i > 3, Store: StoreRedis}); got != want {
			t.Errorf("CONNECT %d on instance %d: %+v, want %+v", i, i%2, got, want)
		}
	}
	for i, r := range recs {
		if got := r.get(func(r *recorder) int { return r.counted["principal/redis"] }); got != 2 {
			t.Errorf("instance %d: Counted(principal, redis) %d times, want 2", i, got)
		}
	}
}

// With Redis gone the Counter falls back to its own count, which holds
// this instance's share of the window counted so far, bans per instance
// meanwhile, and goes back to Redis when it answers again.
func TestCounterFallback(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	store, _ := newTestRedisStore(t, rs.URL())
	rec := newRecorder()
	c := newTestCounter(t, Config{Limit: 3, Redis: store, Observer: rec, RetryInterval: 50 * time.Millisecond})
	ctx := context.Background()
	for i := 1; i <= 2; i++ {
		if got, _ := c.Count(ctx, ScopeAddress, "10.0.0.9", time.Now()); got.Store != StoreRedis || got.N != i {
			t.Fatalf("CONNECT %d with Redis up: %+v, want N %d from redis", i, got, i)
		}
	}
	rs.Kill()
	got, err := c.Count(ctx, ScopeAddress, "10.0.0.9", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got.Store != StoreMemory || got.N != 3 || got.Over {
		t.Errorf("3rd CONNECT with Redis down: %+v, want N 3 from memory, not over", got)
	}
	if !c.InFallback() {
		t.Error("not in fallback mode after a refused connection")
	}
	got, _ = c.Count(ctx, ScopeAddress, "10.0.0.9", time.Now())
	if got.Store != StoreMemory || !got.Over {
		t.Errorf("4th CONNECT with Redis down: %+v, want over, from memory", got)
	}
	if n := rec.get(func(r *recorder) int { return r.errs }); n < 1 {
		t.Errorf("store errors %d, want at least 1", n)
	}
	rs.Restart()
	poll.Until(t, 10*time.Second, func() error {
		if c.InFallback() {
			return errors.New("still in fallback mode after Redis came back")
		}
		return nil
	})
	if got, _ := c.Count(ctx, ScopeAddress, "10.0.0.10", time.Now()); got.Store != StoreRedis {
		t.Errorf("CONNECT after Redis came back: %+v, want it counted in redis", got)
	}
	if f := rec.get(func(r *recorder) int { return len(r.fallback) }); f != 2 {
		t.Errorf("Fallback told %d times, want 2 (entered, left)", f)
	}
}
