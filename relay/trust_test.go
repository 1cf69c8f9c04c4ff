package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/stompframe"
)

// inject publishes payload on dest's channel straight to Redis, as
// anything with write access to it can.
func inject(t *testing.T, rdb *redis.Client, r *Relay, dest string, payload []byte) {
	t.Helper()
	if err := rdb.Publish(context.Background(), r.Channel(dest), payload).Err(); err != nil {
		t.Fatalf("PUBLISH: %v", err)
	}
}

// forged is a well-formed payload from an instance that does not exist,
// sealed by s (nil: unsigned), carrying a message-id header the injector
// would like subscribers to see.
func forged(s *Signer, dest string, body []byte) []byte {
	m := broker.NewMessageParts("x", dest, []stompframe.Header{{Name: "x-from", Value: "injector"}}, body)
	return appendMessage(nil, s, time.Now(), "injector", m)
}

// waitDrops waits until inst counted want drops for reason.
func waitDrops(t *testing.T, inst *instance, reason string, want int) {
	t.Helper()
	poll.Until(t, clientTimeout, func() error {
		if got := inst.obs.drops(reason); got != want {
			return fmt.Errorf("%s: dropped %s %d, want %d", inst.name, reason, got, want)
		}
		return nil
	})
}

// nextFrom checks that the next message on sub is the real one from the
// publishing instance: nothing injected came before it.
func nextFrom(t *testing.T, sub *stomp.Subscription, body string) {
	t.Helper()
	m := stomptest.Next(t, sub)
	if string(m.Body) != body || m.Header.Get("x-from") != "" {
		t.Fatalf("next message: body %.40q x-from %q, want %q from the real publisher", m.Body, m.Header.Get("x-from"), body)
	}
}

// A 5 MB PUBLISH on a relay channel, in the wire format and past every
// other check, is dropped before it is decoded and counted; the
// subscriber gets nothing from it, and the next real message arrives.
func TestOversizedPublishDropped(t *testing.T) {
	_, a, b, rdb := startPair(t)

	const dest = "/topic/room.big"
	sub := stomptest.Subscribe(t, a.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 1)

	big := forged(nil, dest, []byte(strings.Repeat("x", 5<<20)))
	inject(t, rdb, a.relay, dest, big)
	waitDrops(t, a, DropTooLarge, 1)

	// A body at the limit makes a payload just over it.
	inject(t, rdb, a.relay, dest, forged(nil, dest, make([]byte, DefaultMaxPayload)))
	waitDrops(t, a, DropTooLarge, 2)

	pub := b.dial(t)
	if err := pub.Send(dest, "text/plain", []byte("real"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	nextFrom(t, sub, "real")
	// The relay counts a message once it has handed it to the broker,
	// which may be after the subscriber read it.
	poll.Until(t, clientTimeout, func() error {
		if got := a.obs.count(DirectionIn); got != 1 {
			return fmt.Errorf("a: relayed in %d, want 1 (the real message)", got)
		}
		return nil
	})
}

// A message larger than MaxPayload is not published: it is counted where
// it is known, on the publishing instance, and local subscribers still
// get it.
func TestOversizedNotPublished(t *testing.T) {
	rs := testredis.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rs.Addr, ContextTimeoutEnabled: true})
	a := startInstanceConfig(t, "a", client, Config{MaxPayload: 1 << 10})
	b := startInstance(t, "b", rs.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/room.1"
	sub := stomptest.Subscribe(t, b.dial(t), dest)
	waitSubscribers(t, rdb, b.relay, dest, 1)
	pub := a.dial(t)
	if err := pub.Send(dest, "text/plain", make([]byte, 2<<10), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	waitDrops(t, a, DropTooLarge, 1)
	if err := pub.Send(dest, "text/plain", []byte("small"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	nextFrom(t, sub, "small")
}

// With a key on every instance, payloads injected into Redis (unsigned,
// signed with another key, or a real one replayed after MaxAge) are
// dropped and counted by reason; real messages between instances still
// arrive, with a message-id of the receiving instance.
func TestSignedRelay(t *testing.T) {
	rs := testredis.Start(t)
	cfg := Config{Key: testKey, MaxAge: 2 * time.Second}
	newClient := func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: rs.Addr, ContextTimeoutEnabled: true})
	}
	a := startInstanceConfig(t, "a", newClient(), cfg)
	b := startInstanceConfig(t, "b", newClient(), cfg)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/room.signed"
	sub := stomptest.Subscribe(t, a.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 1)

	inject(t, rdb, a.relay, dest, forged(nil, dest, []byte("forged")))
	waitDrops(t, a, DropUnsigned, 1)
	inject(t, rdb, a.relay, dest, forged(testSigner(t, strings.Repeat("k", MinKeyLen)), dest, []byte("forged")))
	waitDrops(t, a, DropBadSignature, 1)
	// A payload sealed with the real key 3 s ago, as a replay of one
	// captured then would be.
	old := appendMessage(nil, a.relay.signer, time.Now().Add(-3*time.Second), "b-then", broker.NewMessageParts("x", dest, []stompframe.Header{{Name: "x-from", Value: "injector"}}, []byte("replayed")))
	inject(t, rdb, a.relay, dest, old)
	waitDrops(t, a, DropStale, 1)

	pub := b.dial(t)
	if err := pub.Send(dest, "text/plain", []byte("real"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	m := stomptest.Next(t, sub)
	if string(m.Body) != "real" {
		t.Fatalf("first message: %q, want the real one", m.Body)
	}
	prefix, _, _ := strings.Cut(a.broker.NextID(), "-")
	if id := m.Header.Get("message-id"); !strings.HasPrefix(id, prefix+"-") {
		t.Errorf("message-id %q, want one of a's (prefix %s)", id, prefix)
	}
	if got := a.obs.drops(DropMalformed); got != 0 {
		t.Errorf("a: dropped malformed %d, want 0", got)
	}
}

// An instance without the key drops nothing its keyed peers send: a key
// can be rolled out one instance at a time, the keyed ones refusing
// the others' unsigned messages meanwhile.
func TestSignedToUnkeyed(t *testing.T) {
	rs := testredis.Start(t)
	a := startInstance(t, "a", rs.Addr)
	b := startInstanceConfig(t, "b", redis.NewClient(&redis.Options{Addr: rs.Addr, ContextTimeoutEnabled: true}), Config{Key: testKey})
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/rollout"
	subA := stomptest.Subscribe(t, a.dial(t), dest)
	subB := stomptest.Subscribe(t, b.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 2)
	if err := b.dial(t).Send(dest, "text/plain", []byte("from b"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	nextFrom(t, subA, "from b")
	nextFrom(t, subB, "from b")
	if err := a.dial(t).Send(dest, "text/plain", []byte("from a"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	nextFrom(t, subA, "from a")
	waitDrops(t, b, DropUnsigned, 1)
}
