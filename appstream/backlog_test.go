package appstream

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
)

// msg returns an app message from principal p at address a with a body of
// size bytes.
func msg(p, a string, size int) server.AppMessage {
	var ip netip.Addr
	if a != "" {
		ip = netip.MustParseAddr(a)
	}
	return server.AppMessage{ID: "m", Destination: "/app/x", Principal: p, Session: "s-" + p, RemoteIP: ip, Body: make([]byte, size)}
}

// cost is what msg(p, a, size) is charged.
func cost(h *Handler, p, a string, size int) int64 {
	return charge(h.fields(msg(p, a, size)))
}

// bound returns the bound err names, "" for nil, or fails.
func bound(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var be *server.AppBacklogError
	if !errors.As(err, &be) {
		t.Fatalf("HandleApp: %v, want nil or an AppBacklogError", err)
	}
	return be.Bound
}

// Each bound refuses the message that would pass it, and only that one;
// a refused message is not appended.
func TestBoundsRefuse(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	const size = 1000
	for i, tc := range []struct {
		name string
		cfg  Config
		// sends, in order; the last one is refused by want, every other
		// one taken.
		from [][2]string
		want string
	}{
		{"principal", Config{MaxPrincipalBytes: 2 * 1200}, [][2]string{{"alice", "10.0.0.1"}, {"bob", "10.0.0.1"}, {"alice", "10.0.0.2"}, {"alice", "10.0.0.3"}}, outcome.AppBoundPrincipal},
		{"address", Config{MaxAddressBytes: 2 * 1200}, [][2]string{{"a", "10.0.0.1"}, {"b", "10.0.0.2"}, {"c", "10.0.0.1"}, {"d", "10.0.0.1"}}, outcome.AppBoundAddress},
		{"unknown address", Config{MaxAddressBytes: 2 * 1200}, [][2]string{{"a", ""}, {"b", ""}, {"c", ""}}, outcome.AppBoundAddress},
		{"address keyed by /64", Config{MaxAddressBytes: 2 * 1200, AddressKey: func(a netip.Addr) string {
			p, _ := a.Prefix(64)
			return p.String()
		}}, [][2]string{{"a", "2001:db8::1"}, {"b", "2001:db8::2"}, {"c", "2001:db8:0:1::1"}, {"d", "2001:db8::3"}}, outcome.AppBoundAddress},
		{"total", Config{MaxTotalBytes: 3 * 1200}, [][2]string{{"a", "10.0.0.1"}, {"b", "10.0.0.2"}, {"c", "10.0.0.3"}, {"d", "10.0.0.4"}}, outcome.AppBoundTotal},
		{"entries", Config{MaxLen: 2}, [][2]string{{"a", "10.0.0.1"}, {"b", "10.0.0.2"}, {"c", "10.0.0.3"}}, outcome.AppBoundEntries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Client = c
			cfg.Stream = fmt.Sprint("bounds:", i)
			h, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := cost(h, "alice", "10.0.0.1", size); n <= size || n > 1200 {
				t.Fatalf("a %d-byte message costs %d, want a little more", size, n)
			}
			for j, f := range tc.from {
				want := ""
				if j == len(tc.from)-1 {
					want = tc.want
				}
				if got := bound(t, h.HandleApp(ctx, msg(f[0], f[1], size))); got != want {
					t.Fatalf("send %d from %v refused by %q, want %q", j, f, got, want)
				}
			}
			if n := c.XLen(ctx, cfg.Stream).Val(); n != int64(len(tc.from)-1) {
				t.Fatalf("XLEN = %d, want %d: a refused message is not appended", n, len(tc.from)-1)
			}
			b, err := h.Backlog(ctx)
			if err != nil || b.Entries != int64(len(tc.from)-1) {
				t.Fatalf("Backlog = %+v, %v", b, err)
			}
		})
	}
}

// ackAll reads everything new for group and acknowledges it, returning the
// bodies' lengths in order.
func ackAll(t *testing.T, c *redis.Client, stream, group string) []int {
	t.Helper()
	ctx := context.Background()
	var got []int
	for {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "w", Streams: []string{stream, ">"}, Count: 100, Block: -1}).Result()
		if errors.Is(err, redis.Nil) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res[0].Messages {
			m, err := Parse(e)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, len(m.Body))
			if err := c.XAck(ctx, stream, group, e.ID).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// One principal appends while the backend does not read: its messages
// are refused at the bound and none of those taken is trimmed; once the
// backend read and acknowledged them all, the next append releases them
// and is taken, and the stream holds only what is unread.
func TestNothingTrimmedUnread(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	h, err := New(Config{Client: c, MaxPrincipalBytes: 100 * 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.XGroupCreateMkStream(ctx, DefaultStream, "backend", "$").Err(); err != nil {
		t.Fatal(err)
	}
	var taken []int
	for i := range 1000 {
		size := 200 + i%300
		err := h.HandleApp(ctx, msg("alice", "10.0.0.1", size))
		if bound(t, err) == outcome.AppBoundPrincipal {
			break
		}
		taken = append(taken, size)
	}
	if len(taken) < 100 || len(taken) > 300 {
		t.Fatalf("%d messages taken before the principal bound, want the bound to bite", len(taken))
	}
	if got := ackAll(t, c, DefaultStream, "backend"); fmt.Sprint(got) != fmt.Sprint(taken) {
		t.Fatalf("the backend read %d messages, want every one of the %d taken, in order", len(got), len(taken))
	}
	if err := h.HandleApp(ctx, msg("alice", "10.0.0.1", 10)); err != nil {
		t.Fatalf("HandleApp after the backend caught up: %v", err)
	}
	if n := c.XLen(ctx, DefaultStream).Val(); n != 1 {
		t.Fatalf("XLEN = %d, want 1: acknowledged messages are trimmed, the new one is not", n)
	}
	want := Backlog{Entries: 1, Bytes: cost(h, "alice", "10.0.0.1", 10)}
	if b, err := h.Backlog(ctx); err != nil || b != want {
		t.Fatalf("Backlog = %+v, %v; want %+v", b, err, want)
	}
}

// A message read and not acknowledged (a backend that crashed mid-read)
// stays counted and in the stream until a worker claims and acknowledges
// it; so does everything after it. A second group that has not read holds
// everything.
func TestPendingHoldsRelease(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	h, err := New(Config{Client: c, MaxTotalBytes: 5 * 1200})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.XGroupCreateMkStream(ctx, DefaultStream, "backend", "$").Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := h.HandleApp(ctx, msg("a", "10.0.0.1", 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// The crashed worker read the first entry and never acknowledged it;
	// another read and acknowledged the other four.
	res := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "crashed", Streams: []string{DefaultStream, ">"}, Count: 1, Block: -1}).Val()
	first := res[0].Messages[0].ID
	if got := ackAll(t, c, DefaultStream, "backend"); len(got) != 4 {
		t.Fatalf("the second worker read %d, want 4", len(got))
	}
	if got := bound(t, h.HandleApp(ctx, msg("b", "10.0.0.2", 1000))); got != outcome.AppBoundTotal {
		t.Fatalf("append with an entry pending: refused by %q, want total", got)
	}
	if n := c.XLen(ctx, DefaultStream).Val(); n != 5 {
		t.Fatalf("XLEN = %d, want 5: nothing from the pending entry on is trimmed", n)
	}
	// A restarted worker claims what the crashed one left and
	// acknowledges it.
	claimed, _, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: DefaultStream, Group: "backend", Consumer: "restarted", Start: "0"}).Result()
	if err != nil || len(claimed) != 1 || claimed[0].ID != first {
		t.Fatalf("XAUTOCLAIM = %+v, %v", claimed, err)
	}
	c.XAck(ctx, DefaultStream, "backend", first)
	if err := h.HandleApp(ctx, msg("b", "10.0.0.2", 1000)); err != nil {
		t.Fatalf("append after the claim: %v", err)
	}
	if n := c.XLen(ctx, DefaultStream).Val(); n != 1 {
		t.Fatalf("XLEN = %d, want 1", n)
	}

	// A second group that has read nothing holds every message.
	if err := c.XGroupCreate(ctx, DefaultStream, "audit", "0").Err(); err != nil {
		t.Fatal(err)
	}
	ackAll(t, c, DefaultStream, "backend")
	for range 4 {
		if err := h.HandleApp(ctx, msg("c", "10.0.0.3", 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if got := bound(t, h.HandleApp(ctx, msg("c", "10.0.0.3", 1000))); got != outcome.AppBoundTotal {
		t.Fatalf("append with the audit group behind: refused by %q, want total", got)
	}
	if got := ackAll(t, c, DefaultStream, "audit"); len(got) != 5 {
		t.Fatalf("the audit group read %d, want all 5", len(got))
	}
}

// The counters cannot outlive what they count: a ledger or a stream
// deleted by hand resets them, and without any group nothing is released.
func TestCountersReconcile(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	h, err := New(Config{Client: c, MaxPrincipalBytes: 3 * 1200})
	if err != nil {
		t.Fatal(err)
	}
	fill := func() {
		t.Helper()
		for i := range 3 {
			if err := h.HandleApp(ctx, msg("a", "10.0.0.1", 1000)); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
		if got := bound(t, h.HandleApp(ctx, msg("a", "10.0.0.1", 1000))); got != outcome.AppBoundPrincipal {
			t.Fatalf("refused by %q, want principal (no group: nothing released)", got)
		}
	}
	for _, key := range []string{h.keys[1], h.keys[0]} {
		fill()
		c.Del(ctx, key)
		if err := h.HandleApp(ctx, msg("a", "10.0.0.1", 1000)); err != nil {
			t.Fatalf("append after deleting %s: %v", key, err)
		}
		if b, _ := h.Backlog(ctx); b.Entries != 1 || b.Bytes != cost(h, "a", "10.0.0.1", 1000) {
			t.Fatalf("after deleting %s: Backlog = %+v", key, b)
		}
		c.Del(ctx, h.keys[:]...)
	}
}

// The script's keys share the stream's slot: its hash tag, or its whole
// name as one.
func TestKeysShareSlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ stream, ledger string }{
		{"stompgate:app", "{stompgate:app}:ledger"},
		{"{game}:in", "{game}:in:ledger"},
	} {
		if got := keys(tc.stream); got[1] != tc.ledger || !strings.HasSuffix(got[2], ":backlog") {
			t.Errorf("keys(%q) = %q, want ledger %q", tc.stream, got, tc.ledger)
		}
	}
}
