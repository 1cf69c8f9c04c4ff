package handshake

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewMemoryStoreConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     MemoryConfig
		wantErr string
		wantLen int // total capacity when no error
	}{
		{name: "zero value", cfg: MemoryConfig{}, wantLen: DefaultMaxKeys},
		{name: "fewer keys than default shards", cfg: MemoryConfig{MaxKeys: 10}, wantLen: 10},
		{name: "uneven split", cfg: MemoryConfig{MaxKeys: 100, Shards: 7}, wantLen: 100},
		{name: "negative MaxKeys", cfg: MemoryConfig{MaxKeys: -1}, wantErr: "handshake: MemoryConfig.MaxKeys -1 is negative"},
		{name: "negative Shards", cfg: MemoryConfig{Shards: -2}, wantErr: "handshake: MemoryConfig.Shards -2 is negative"},
		{name: "more shards than keys", cfg: MemoryConfig{MaxKeys: 4, Shards: 8}, wantErr: "handshake: MemoryConfig.Shards 8 is above MaxKeys 4"},
		{name: "too many keys", cfg: MemoryConfig{MaxKeys: 1 << 31}, wantErr: "handshake: MemoryConfig.MaxKeys 2147483648 is above 1073741824"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewMemoryStore(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("NewMemoryStore(%+v) error = %v, want %q", tt.cfg, err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewMemoryStore(%+v) error = %v, want nil", tt.cfg, err)
			}
			total := 0
			for i := range s.shards {
				total += s.shards[i].capacity
			}
			if total != tt.wantLen {
				t.Errorf("total capacity = %d, want %d", total, tt.wantLen)
			}
		})
	}
}

func TestMemoryStoreInvalidInput(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AllowAt(t0, "", handshakeLimit); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("AllowAt with empty key error = %v, want ErrEmptyKey", err)
	}
	if _, err := s.AllowAt(t0, "k", Limit{Name: "z"}); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("AllowAt with zero rate error = %v, want ErrInvalidLimit", err)
	}
	if err := s.BanAt(t0, "", time.Second); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("BanAt with empty key error = %v, want ErrEmptyKey", err)
	}
}

// A flood of distinct addresses must not grow the store past MaxKeys.
func TestMemoryStoreBoundedUnderFlood(t *testing.T) {
	const maxKeys = 1000
	s, err := NewMemoryStore(MemoryConfig{MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	buf := make([]byte, 0, 16)
	for i := range n {
		buf = strconv.AppendInt(buf[:0], int64(i), 10)
		r, err := s.AllowAt(t0, string(buf), handshakeLimit)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Allowed {
			t.Fatalf("first request of key %d refused", i)
		}
	}
	if got := s.Len(); got != maxKeys {
		t.Errorf("Len() after %d distinct keys = %d, want %d", n, got, maxKeys)
	}
	for i := range s.shards {
		sh := &s.shards[i]
		if len(sh.nodes) > sh.capacity {
			t.Errorf("shard %d holds %d slots, capacity %d", i, len(sh.nodes), sh.capacity)
		}
	}
}

// The least recently used entry is evicted first; an evicted key starts
// again at rest.
func TestMemoryStoreLRU(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{MaxKeys: 2, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	allow := func(key string) Result {
		t.Helper()
		r, err := s.AllowAt(t0, key, handshakeLimit)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 6 {
		allow("a")
	}
	for range 6 {
		allow("b")
	}
	if r := allow("a"); r.Allowed {
		t.Fatal("7th request of a allowed, want refused") // and a is now most recent
	}
	allow("c") // evicts b, the least recently used
	if got := s.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if r := allow("a"); r.Allowed {
		t.Error("a was evicted: 8th request allowed, want refused")
	}
	if r := allow("b"); !r.Allowed || r.Excess != 0 {
		t.Errorf("b after eviction = %+v, want allowed at rest (excess 0)", r)
	}
}

func TestMemoryStoreBan(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if r, _ := s.AllowAt(at(0), "203.0.113.9", handshakeLimit); !r.Allowed {
		t.Fatal("first request refused")
	}
	if err := s.BanAt(at(0), "203.0.113.9", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		atMs       int64
		zone       string
		wantOK     bool
		wantBanned bool
		wantRetry  time.Duration
	}{
		{name: "banned", atMs: 1000, zone: "ws_handshake", wantBanned: true, wantRetry: 9 * time.Second},
		{name: "banned in another zone", atMs: 1000, zone: "rooms", wantBanned: true, wantRetry: 9 * time.Second},
		{name: "last ms of the ban", atMs: 9999, zone: "ws_handshake", wantBanned: true, wantRetry: time.Millisecond},
		{name: "ban over", atMs: 10_000, zone: "ws_handshake", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := handshakeLimit
			l.Name = tt.zone
			r, err := s.AllowAt(at(tt.atMs), "203.0.113.9", l)
			if err != nil {
				t.Fatal(err)
			}
			if r.Allowed != tt.wantOK || r.Banned != tt.wantBanned || r.RetryAfter != tt.wantRetry {
				t.Errorf("AllowAt(t0+%dms) = %+v, want Allowed %v Banned %v RetryAfter %v", tt.atMs, r, tt.wantOK, tt.wantBanned, tt.wantRetry)
			}
		})
	}
	// A ban refused nothing in the bucket: excess is where the first
	// request left it, drained by the time passed.
	if err := s.BanAt(at(20_000), "203.0.113.9", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.BanAt(at(20_000), "203.0.113.9", 0); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.AllowAt(at(20_000), "203.0.113.9", handshakeLimit); !r.Allowed || r.Banned {
		t.Errorf("after lifting the ban = %+v, want allowed", r)
	}
}

// Concurrent requests for one key at one instant: exactly burst+1 pass.
func TestMemoryStoreConcurrentSameKey(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var passed atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for range 20 {
				r, err := s.AllowAt(t0, "192.0.2.77", handshakeLimit)
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
		t.Errorf("%d concurrent requests at one instant: %d passed, want %d", 50*20, got, want)
	}
}

func TestMemoryStoreClock(t *testing.T) {
	now := t0
	s, err := NewMemoryStore(MemoryConfig{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if r, _ := s.Allow(t.Context(), "k", handshakeLimit); !r.Allowed {
			t.Fatalf("request %d refused", i)
		}
	}
	if r, _ := s.Allow(t.Context(), "k", handshakeLimit); r.Allowed {
		t.Fatal("7th request allowed, want refused")
	}
	now = now.Add(334 * time.Millisecond)
	if r, _ := s.Allow(t.Context(), "k", handshakeLimit); !r.Allowed {
		t.Error("request after 334ms refused, want allowed")
	}
}

// A ban is an entry like any other: it can be evicted, and the shard's ban
// count follows insertions, lifts and evictions.
func TestMemoryStoreBanEviction(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{MaxKeys: 1, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	sh := &s.shards[0]
	if err := s.BanAt(t0, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if sh.bans != 1 {
		t.Fatalf("bans after BanAt = %d, want 1", sh.bans)
	}
	if r, _ := s.AllowAt(t0, "a", handshakeLimit); !r.Banned {
		t.Fatalf("a = %+v, want Banned", r)
	}
	if r, _ := s.AllowAt(t0, "b", handshakeLimit); !r.Allowed {
		t.Fatalf("b = %+v, want allowed", r)
	}
	if sh.bans != 0 {
		t.Errorf("bans after the ban was evicted = %d, want 0", sh.bans)
	}
	if r, _ := s.AllowAt(t0, "a", handshakeLimit); r.Banned {
		t.Errorf("a after its ban was evicted = %+v, want not banned", r)
	}
	if err := s.BanAt(t0, "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.BanAt(t0, "a", -1); err != nil {
		t.Fatal(err)
	}
	if sh.bans != 0 || s.Len() != 0 {
		t.Errorf("after lifting: bans %d, Len %d; want 0, 0", sh.bans, s.Len())
	}
}

func TestMemoryStoreBannedAt(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if err := s.BanAt(at(0), "principal:mallory", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		atMs       int64
		key        string
		wantBanned bool
		wantRetry  time.Duration
	}{
		{name: "banned", atMs: 1000, key: "principal:mallory", wantBanned: true, wantRetry: 9 * time.Second},
		{name: "another key", atMs: 1000, key: "principal:alice"},
		{name: "last ms of the ban", atMs: 9999, key: "principal:mallory", wantBanned: true, wantRetry: time.Millisecond},
		{name: "ban over", atMs: 10_000, key: "principal:mallory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, banned, err := s.BannedAt(at(tt.atMs), tt.key)
			if err != nil || banned != tt.wantBanned || d != tt.wantRetry {
				t.Errorf("BannedAt(t0+%dms, %q) = %v, %v, %v; want %v, %v, nil", tt.atMs, tt.key, d, banned, err, tt.wantRetry, tt.wantBanned)
			}
		})
	}
	// The expired ban was removed and the checks created nothing.
	if n := s.Len(); n != 0 {
		t.Errorf("Len() after the ban expired = %d, want 0", n)
	}
	if _, _, err := s.BannedAt(t0, ""); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("BannedAt with empty key error = %v, want ErrEmptyKey", err)
	}
}
