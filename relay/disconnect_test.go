package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// endRecorder is a SessionEnder that notes each request and the drops.
type endRecorder struct {
	mu      sync.Mutex
	ended   []string // "principal/session/reason"
	dropped []string
}

func (e *endRecorder) Disconnect(principal, sessionID, reason string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = append(e.ended, principal+"/"+sessionID+"/"+reason)
	return 1
}

func (e *endRecorder) drop(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropped = append(e.dropped, reason)
}

func (e *endRecorder) snapshot() (ended, dropped []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ended), slices.Clone(e.dropped)
}

func startDisconnects(t *testing.T, rdb redis.UniversalClient, key string) (*Disconnects, *endRecorder) {
	t.Helper()
	rec := &endRecorder{}
	d, err := StartDisconnects(DisconnectConfig{Client: rdb, Sessions: rec, Key: key, MaxPayload: 1 << 10, Dropped: rec.drop})
	if err != nil {
		t.Fatalf("StartDisconnects: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, rec
}

// A request reaches the other instances, not its sender; what is too
// large, unreadable or not signed with the key is dropped and counted.
func TestDisconnects(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	key := strings.Repeat("k", MinKeyLen)
	a, recA := startDisconnects(t, rdb, key)
	_, recB := startDisconnects(t, rdb, key)
	poll.Until(t, clientTimeout, func() error {
		n, err := rdb.PubSubNumSub(context.Background(), DisconnectChannel).Result()
		if err != nil || n[DisconnectChannel] != 2 {
			return fmt.Errorf("%s has %v subscribers, want 2 (%v)", DisconnectChannel, n, err)
		}
		return nil
	})

	ctx := context.Background()
	if err := a.Disconnect(ctx, "alice", "", "revoked"); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}
	for _, p := range []any{strings.Repeat("x", 2<<10), "{}", (*Signer)(nil).Seal(nil, []byte(`{"from":"x","session":"s1"}`), time.Now())} {
		if err := rdb.Publish(ctx, DisconnectChannel, p).Err(); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	wantDropped := []string{DropTooLarge, DropMalformed, DropUnsigned}
	poll.Until(t, clientTimeout, func() error {
		ended, dropped := recB.snapshot()
		if !slices.Equal(ended, []string{"alice//revoked"}) || !slices.Equal(dropped, wantDropped) {
			return fmt.Errorf("b ended %q and dropped %q, want [alice//revoked] and %q", ended, dropped, wantDropped)
		}
		return nil
	})
	if ended, _ := recA.snapshot(); len(ended) > 0 {
		t.Errorf("the sender acted on its own request: %q", ended)
	}
}

func TestDisconnectConfigErrors(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tt := range []struct {
		name string
		cfg  DisconnectConfig
		want string
	}{
		{"no client", DisconnectConfig{Sessions: &endRecorder{}}, "relay: DisconnectConfig.Client is nil"},
		{"no sessions", DisconnectConfig{Client: rdb}, "relay: DisconnectConfig.Sessions is nil"},
		{"negative payload", DisconnectConfig{Client: rdb, Sessions: &endRecorder{}, MaxPayload: -1}, "relay: DisconnectConfig.MaxPayload -1 is negative"},
		{"short key", DisconnectConfig{Client: rdb, Sessions: &endRecorder{}, Key: "short"}, "relay: Key is 5 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := StartDisconnects(tt.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrInvalidConfig) {
				_ = d.Close()
				t.Fatalf("StartDisconnects: %v, want %q (ErrInvalidConfig)", err, tt.want)
			}
		})
	}
	var d *Disconnects
	if err := d.Close(); err != nil {
		t.Errorf("nil Disconnects.Close = %v", err)
	}
}
