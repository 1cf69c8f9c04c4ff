package handshake

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
)

func TestNewRedisStoreConfig(t *testing.T) {
	good := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer good.Close()
	blocking := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer blocking.Close()
	tests := []struct {
		name    string
		cfg     RedisConfig
		wantErr string
	}{
		{name: "defaults", cfg: RedisConfig{Client: good}},
		{name: "nil client", cfg: RedisConfig{}, wantErr: "handshake: RedisConfig.Client is nil"},
		{name: "context timeouts off", cfg: RedisConfig{Client: blocking}, wantErr: "handshake: RedisConfig.Client has ContextTimeoutEnabled false: a hung Redis would hold handshakes past Timeout"},
		{name: "negative timeout", cfg: RedisConfig{Client: good, Timeout: -time.Second}, wantErr: "handshake: RedisConfig.Timeout -1s is negative"},
		{name: "brace in prefix", cfg: RedisConfig{Client: good, Prefix: "app{1}:"}, wantErr: `handshake: RedisConfig.Prefix "app{1}:" contains a brace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewRedisStore(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewRedisStore error = %v, want nil", err)
				}
				if s.timeout != DefaultTimeout || s.prefix != DefaultPrefix {
					t.Errorf("defaults: timeout %v prefix %q, want %v %q", s.timeout, s.prefix, DefaultTimeout, DefaultPrefix)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewRedisStore error = %v, want %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
			}
		})
	}
}

// Both keys of a decision carry the same hash tag, so they are in one
// Cluster slot whatever the key contains.
func TestRedisKeysShareHashTag(t *testing.T) {
	s := &RedisStore{prefix: DefaultPrefix}
	for _, key := range []string{"192.0.2.1", "2001:db8::1", "user}x", "a{b}c", "principal:alice"} {
		bk, ban := s.bucketKey(key, "ws_handshake"), s.banKey(key)
		if got, want := hashTag(bk), hashTag(ban); got != want {
			t.Errorf("key %q: tags %q (%s) and %q (%s) differ", key, got, bk, want, ban)
		}
	}
	if got, want := s.bucketKey("192.0.2.1", "ws_handshake"), "stompgate:hs:{192.0.2.1}:ws_handshake"; got != want {
		t.Errorf("bucketKey = %q, want %q", got, want)
	}
	if got, want := s.banKey("192.0.2.1"), "stompgate:ban:{192.0.2.1}"; got != want {
		t.Errorf("banKey = %q, want %q", got, want)
	}
}

// hashTag is the part of key Redis Cluster hashes: between the first '{'
// and the next '}', if non-empty, else the whole key.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// With Redis' own clock (no test hook): the burst from rest, the TTL and a
// ban. 30r/m keeps the test far from any timing edge.
func TestRedisStoreRealClock(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := Limit{Name: "ws_handshake", Rate: 500, Burst: 5}
	for i := range 6 {
		r, err := s.Allow(ctx, "192.0.2.10", l)
		if err != nil {
			t.Fatal(err)
		}
		// Real milliseconds pass between requests: at 30r/m each
		// drains 0.5 thousandths.
		if want := int64(i) * 1000; !r.Allowed || r.Store != StoreRedis || r.Excess > want || r.Excess < want-100 {
			t.Fatalf("request %d = %+v, want allowed by redis with excess about %d", i+1, r, want)
		}
	}
	r, err := s.Allow(ctx, "192.0.2.10", l)
	if err != nil {
		t.Fatal(err)
	}
	if r.Allowed || r.Banned || r.RetryAfter <= 0 || r.RetryAfter > 2*time.Second {
		t.Errorf("7th request = %+v, want refused with 0 < RetryAfter <= 2s", r)
	}

	ttl, err := client.PTTL(ctx, "stompgate:hs:{192.0.2.10}:ws_handshake").Result()
	if err != nil {
		t.Fatal(err)
	}
	// excess 5000 at 30r/m drains in (5000+1000)*1000/500 = 12000ms.
	if max := time.Duration(ttlMs(5000, 500)) * time.Millisecond; ttl <= 0 || ttl > max {
		t.Errorf("PTTL of the bucket = %v, want in (0, %v]", ttl, max)
	}

	if err := s.Ban(ctx, "192.0.2.11", time.Minute); err != nil {
		t.Fatal(err)
	}
	r, err = s.Allow(ctx, "192.0.2.11", l)
	if err != nil {
		t.Fatal(err)
	}
	if r.Allowed || !r.Banned || r.RetryAfter <= 0 || r.RetryAfter > time.Minute {
		t.Errorf("banned key = %+v, want refused, Banned, RetryAfter in (0, 1m]", r)
	}
	if n, _ := client.Exists(ctx, "stompgate:hs:{192.0.2.11}:ws_handshake").Result(); n != 0 {
		t.Errorf("a banned request created the bucket, want no state change")
	}
	if err := s.Ban(ctx, "192.0.2.11", 0); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Allow(ctx, "192.0.2.11", l); !r.Allowed {
		t.Errorf("after lifting the ban = %+v, want allowed", r)
	}
}

// The script must be atomic: 50 concurrent callers on one key at one
// instant let exactly burst+1 through.
func TestRedisStoreConcurrentSameKey(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.nowMs = func() int64 { return t0.UnixMilli() }
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 4 {
				r, err := s.Allow(context.Background(), "192.0.2.50", handshakeLimit)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Allowed {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got, want := passed.Load(), int64(handshakeLimit.Burst+1); got != want {
		t.Errorf("200 concurrent requests at one instant: %d passed, want %d", got, want)
	}
}

// A flushed script cache is reloaded (EVALSHA fails with NOSCRIPT, EVAL
// runs).
func TestRedisStoreScriptFlush(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Allow(t.Context(), "k", handshakeLimit); err != nil {
		t.Fatal(err)
	}
	if err := client.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Allow(t.Context(), "k", handshakeLimit); err != nil || !r.Allowed {
		t.Errorf("Allow after SCRIPT FLUSH = %+v, %v; want allowed, nil", r, err)
	}
}

// Banned reads the ban key the decision script checks, under the
// configured prefix, and agrees with the script on what is a ban.
func TestRedisStoreBanned(t *testing.T) {
	srv := testredis.Start(t)
	client := newTestClient(t, srv.URL())
	s, err := NewRedisStore(RedisConfig{Client: client, Timeout: 5 * time.Second, Prefix: "test:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Ban(ctx, "principal:mallory", time.Minute); err != nil {
		t.Fatal(err)
	}
	// A key that exists without an expiry is no ban for the script.
	if err := client.Set(ctx, "test:ban:{principal:eve}", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key        string
		wantBanned bool
	}{
		{"principal:mallory", true},
		{"principal:alice", false},
		{"principal:eve", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			d, banned, err := s.Banned(ctx, tt.key)
			if err != nil {
				t.Fatal(err)
			}
			if banned != tt.wantBanned || (banned && (d <= 0 || d > time.Minute)) || (!banned && d != 0) {
				t.Errorf("Banned(%q) = %v, %v; want banned %v with RetryAfter in (0, 1m] when banned, 0 otherwise", tt.key, d, banned, tt.wantBanned)
			}
			r, err := s.Allow(ctx, tt.key, handshakeLimit)
			if err != nil {
				t.Fatal(err)
			}
			if r.Banned != banned {
				t.Errorf("Allow(%q).Banned = %v, Banned() = %v; want them equal", tt.key, r.Banned, banned)
			}
		})
	}
	if err := s.Ban(ctx, "principal:mallory", 0); err != nil {
		t.Fatal(err)
	}
	if _, banned, err := s.Banned(ctx, "principal:mallory"); err != nil || banned {
		t.Errorf("Banned after lifting the ban = %v, %v; want false, nil", banned, err)
	}
	if _, _, err := s.Banned(ctx, ""); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Banned with empty key error = %v, want ErrEmptyKey", err)
	}
	srv.Kill()
	if _, _, err := s.Banned(ctx, "principal:mallory"); err == nil || !strings.HasPrefix(err.Error(), "handshake: redis ban check: ") {
		t.Errorf("Banned with Redis down error = %v, want a wrapped Redis error", err)
	}
}

// ttlMs is how long limit.lua keeps a bucket: after this many milliseconds
// without a request it has drained so far that the next request sees the
// same excess (0) as for a fresh key, so dropping it changes no decision.
// A margin of one second covers rounding and scheduling.
func ttlMs(excess, rate int64) int64 {
	return (excess+1000)*1000/rate + 1 + 1000
}
