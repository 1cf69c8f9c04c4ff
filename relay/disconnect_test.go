package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
)

// endRecorder is a SessionEnder that passes on each request it is asked
// to act on ("principal/session/reason") and each drop.
type endRecorder struct {
	ended   chan string
	dropped chan string
}

func newEndRecorder() *endRecorder {
	return &endRecorder{ended: make(chan string, 16), dropped: make(chan string, 16)}
}

func (e *endRecorder) Disconnect(principal, sessionID, reason string) int {
	e.ended <- principal + "/" + sessionID + "/" + reason
	return 1
}

func (e *endRecorder) drop(reason string) { e.dropped <- reason }

// next returns the next value of ch, failing the test after clientTimeout.
func next(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(clientTimeout):
		t.Fatalf("no %s after %v", what, clientTimeout)
		return ""
	}
}

func startDisconnects(t *testing.T, rdb redis.UniversalClient, key string) (*Disconnects, *endRecorder) {
	t.Helper()
	rec := newEndRecorder()
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
		n, err := rdb.PubSubNumSub(t.Context(), DisconnectChannel).Result()
		if err != nil || n[DisconnectChannel] != 2 {
			return fmt.Errorf("%s has %v subscribers, want 2 (%v)", DisconnectChannel, n, err)
		}
		return nil
	})

	ctx := t.Context()
	if err := a.Disconnect(ctx, "alice", "", "revoked"); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}
	for _, p := range []any{strings.Repeat("x", 2<<10), "{}", (*Signer)(nil).Seal(nil, []byte(`{"from":"x","session":"s1"}`), time.Now())} {
		if err := rdb.Publish(ctx, DisconnectChannel, p).Err(); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	if got := next(t, recB.ended, "request acted on"); got != "alice//revoked" {
		t.Errorf("b ended %q, want alice//revoked", got)
	}
	for _, want := range []string{DropTooLarge, DropMalformed, DropUnsigned} {
		if got := next(t, recB.dropped, "drop"); got != want {
			t.Errorf("b dropped a request as %q, want %q", got, want)
		}
	}
	// Each instance handles requests in order: once a has dropped the
	// three after its own, it has seen its own and acted on none of it.
	for range 3 {
		next(t, recA.dropped, "drop on the sender")
	}
	select {
	case got := <-recA.ended:
		t.Errorf("the sender acted on its own request: %q", got)
	default:
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
		{"no client", DisconnectConfig{Sessions: newEndRecorder()}, "relay: DisconnectConfig.Client is nil"},
		{"no sessions", DisconnectConfig{Client: rdb}, "relay: DisconnectConfig.Sessions is nil"},
		{"negative payload", DisconnectConfig{Client: rdb, Sessions: newEndRecorder(), MaxPayload: -1}, "relay: DisconnectConfig.MaxPayload -1 is negative"},
		{"short key", DisconnectConfig{Client: rdb, Sessions: newEndRecorder(), Key: "short"}, "relay: Key is 5 bytes"},
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
