package sessioncap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// countingObserver counts what a RedisStore or Limiter reports.
type countingObserver struct {
	mu        sync.Mutex
	decisions map[string][]Decision
	released  map[string]int
	errs      int
	restored  int
	fallback  []bool
	confirmed []bool
	displaced map[string]int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{decisions: map[string][]Decision{}, released: map[string]int{}, displaced: map[string]int{}}
}

func (o *countingObserver) Displaced(scope string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.displaced[scope] += n
}

func (o *countingObserver) Decision(scope string, d Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decisions[scope] = append(o.decisions[scope], d)
}

func (o *countingObserver) Released(scope string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.released[scope]++
}

func (o *countingObserver) Fallback(active bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fallback = append(o.fallback, active)
}

func (o *countingObserver) Confirmation(answered bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.confirmed = append(o.confirmed, answered)
}

func (o *countingObserver) confirmations() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]bool(nil), o.confirmed...)
}

func (o *countingObserver) StoreError(error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs++
}

func (o *countingObserver) LeasesRestored(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restored += n
}

func (o *countingObserver) snapshot() (errs, restored int, fallback []bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.errs, o.restored, append([]bool(nil), o.fallback...)
}

// The cap holds across two stores sharing one Redis, as two instances
// would; a release on one frees a slot for the other.
func TestRedisStoreAcrossInstances(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	a := newTestRedisStore(t, srv.URL(), RedisConfig{})
	b := newTestRedisStore(t, srv.URL(), RedisConfig{})
	ctx := t.Context()
	const key, max = "ip:ws:192.0.2.1", 3

	var ids []string
	for i, s := range []*RedisStore{a, b, a} {
		id, held, ok, err := s.Acquire(ctx, key, max)
		if err != nil || !ok || held != i {
			t.Fatalf("acquire %d: %q, held %d, %v, %v; want allowed with %d held", i+1, id, held, ok, err, i)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] || strings.Split(ids[0], ":")[0] == strings.Split(ids[1], ":")[0] {
		t.Errorf("lease ids %q and %q of two stores share an instance prefix", ids[0], ids[1])
	}
	if _, held, ok, err := b.Acquire(ctx, key, max); err != nil || ok || held != max {
		t.Fatalf("acquire over the cap = held %d, %v, %v; want refused with %d held", held, ok, err, max)
	}
	if n, err := b.Held(ctx, key); err != nil || n != max {
		t.Errorf("Held = %d, %v; want %d", n, err, max)
	}
	if err := a.Release(ctx, key, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, held, ok, err := b.Acquire(ctx, key, max); err != nil || !ok || held != max-1 {
		t.Fatalf("acquire after a release = held %d, %v, %v; want allowed with %d held", held, ok, err, max-1)
	}
	// Another key is not affected.
	if _, _, ok, err := a.Acquire(ctx, "ip:ws:192.0.2.2", max); err != nil || !ok {
		t.Fatalf("another key: %v, %v; want allowed", ok, err)
	}
}

// A store that stops renewing (its instance crashed) loses its slots
// within the lease TTL; one that keeps renewing holds them past it.
func TestRedisStoreLeaseExpiry(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	const ttl = 300 * time.Millisecond
	live := newTestRedisStore(t, srv.URL(), RedisConfig{LeaseTTL: ttl})
	dead := newTestRedisStore(t, srv.URL(), RedisConfig{LeaseTTL: ttl})
	other := newTestRedisStore(t, srv.URL(), RedisConfig{LeaseTTL: ttl})
	ctx := t.Context()
	const key, max = "principal:alice", 2

	liveID, _, ok, err := live.Acquire(ctx, key, max)
	if err != nil || !ok {
		t.Fatalf("live acquire: %v, %v", ok, err)
	}
	if _, _, ok, err := dead.Acquire(ctx, key, max); err != nil || !ok {
		t.Fatalf("dead acquire: %v, %v", ok, err)
	}
	first, err := live.client.ZScore(ctx, live.setKey(key), liveID).Result()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = dead.Close() // crashed: no renewal, no release

	// The dead lease's slot comes back; the live one stays taken.
	poll.Until(t, 10*time.Second, func() error {
		if _, _, ok, err := other.Acquire(ctx, key, max); err != nil || !ok {
			return fmt.Errorf("slot of the dead instance not free yet (%v)", err)
		}
		return nil
	})
	if waited := time.Since(start); waited > 10*ttl {
		// Not a timing assertion on the code: a sanity check on the
		// bound, with a tenfold margin for a loaded machine.
		t.Errorf("dead slot came back after %v, want about the lease TTL %v", waited, ttl)
	}
	if _, held, ok, _ := other.Acquire(ctx, key, max); ok || held != max {
		t.Errorf("third acquire = held %d, %v; want refused: the live lease is still held", held, ok)
	}
	// The live lease was renewed past its first expiry.
	poll.Until(t, 10*time.Second, func() error {
		s, err := live.client.ZScore(ctx, live.setKey(key), liveID).Result()
		if err != nil {
			return err
		}
		if s < first+float64(ttl.Milliseconds()) {
			return fmt.Errorf("live lease expiry %v, not yet renewed past %v", s, first+float64(ttl.Milliseconds()))
		}
		return nil
	})
}

// Renewal writes back the leases a restarted, empty Redis has lost.
func TestRedisStoreRestoresLeases(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	obs := newCountingObserver()
	s := newTestRedisStore(t, srv.URL(), RedisConfig{LeaseTTL: 300 * time.Millisecond, Observer: obs})
	ctx := t.Context()
	for range 2 {
		if _, _, ok, err := s.Acquire(ctx, "ip:ws:192.0.2.3", 5); err != nil || !ok {
			t.Fatalf("acquire: %v, %v", ok, err)
		}
	}
	srv.Restart()
	// The observer hears of the leases once the renewal that wrote them
	// back has returned: wait for both.
	poll.Until(t, 10*time.Second, func() error {
		n, err := s.Held(ctx, "ip:ws:192.0.2.3")
		if err != nil || n != 2 {
			return fmt.Errorf("held %d (%v) after the restart, want the 2 leases written back", n, err)
		}
		if _, restored, _ := obs.snapshot(); restored != 2 {
			return fmt.Errorf("LeasesRestored total %d, want 2", restored)
		}
		return nil
	})
}

// The lease sets live on a real Redis Cluster: keys of many IPs hash to
// several masters, and one renewal pipeline extends leases on all of them.
func TestRedisStoreCluster(t *testing.T) {
	t.Parallel()
	rc := testredis.StartCluster(t)
	obs := newCountingObserver()
	const ttl = 300 * time.Millisecond
	s := newTestRedisStore(t, rc.URL(), RedisConfig{LeaseTTL: ttl, Observer: obs})
	ctx := t.Context()
	first := map[string]float64{} // key -> expiry of its first lease
	ids := map[string]string{}
	for i := range 16 {
		key := fmt.Sprintf("ip:ws:198.51.100.%d", i)
		for n := range 3 {
			id, _, ok, err := s.Acquire(ctx, key, 2)
			if err != nil || ok != (n < 2) {
				t.Fatalf("%s acquire %d: %v, %v; want allowed %v", key, n+1, ok, err, n < 2)
			}
			if n == 0 {
				score, err := s.client.ZScore(ctx, s.setKey(key), id).Result()
				if err != nil {
					t.Fatal(err)
				}
				first[key], ids[key] = score, id
			}
		}
	}
	// Every key's lease is renewed past its first expiry, on whichever
	// master holds it.
	poll.Until(t, 10*time.Second, func() error {
		for key, exp := range first {
			score, err := s.client.ZScore(ctx, s.setKey(key), ids[key]).Result()
			if err != nil {
				return fmt.Errorf("%s: %v", key, err)
			}
			if score < exp+float64(ttl.Milliseconds()) {
				return fmt.Errorf("%s: lease not yet renewed past %v", key, exp)
			}
		}
		return nil
	})
	if errs, _, _ := obs.snapshot(); errs != 0 {
		t.Errorf("%d store errors on the cluster, want 0", errs)
	}
}

func TestNewRedisStoreConfig(t *testing.T) {
	t.Parallel()
	client := newTestClient(t, "redis://127.0.0.1:1/0")
	blocking := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = blocking.Close() })
	tests := []struct {
		name    string
		cfg     RedisConfig
		wantErr string
	}{
		{name: "no client", cfg: RedisConfig{}, wantErr: "sessioncap: RedisConfig.Client is nil"},
		{name: "context timeouts off", cfg: RedisConfig{Client: blocking}, wantErr: "sessioncap: RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold new sessions past Timeout"},
		{name: "short ttl", cfg: RedisConfig{Client: client, LeaseTTL: time.Millisecond}, wantErr: "sessioncap: RedisConfig.LeaseTTL 1ms is below 30ms"},
		{name: "negative timeout", cfg: RedisConfig{Client: client, Timeout: -1}, wantErr: "sessioncap: RedisConfig.Timeout -1ns is negative"},
		{name: "brace", cfg: RedisConfig{Client: client, Prefix: "x{"}, wantErr: `sessioncap: RedisConfig.Prefix "x{" contains a brace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRedisStore(tt.cfg)
			if err == nil || err.Error() != tt.wantErr || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewRedisStore error = %v, want %s matching ErrInvalidConfig", err, tt.wantErr)
			}
		})
	}
	s, err := NewRedisStore(RedisConfig{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ttl != DefaultLeaseTTL {
		t.Errorf("lease TTL = %v, want %v", s.ttl, DefaultLeaseTTL)
	}
	if _, _, _, err := s.Acquire(context.Background(), "", 1); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Acquire with empty key = %v, want ErrEmptyKey", err)
	}
	if _, _, _, err := s.Acquire(context.Background(), "k", 0); !errors.Is(err, ErrInvalidMax) {
		t.Errorf("Acquire with max 0 = %v, want ErrInvalidMax", err)
	}
}
