package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/history/streams"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/stompframe"
)

// A message of a destination with history goes through Redis Streams and
// comes back as a frame to every instance, the publishing one too, with
// its position; a frame whose signed payload names another destination
// than its channel's, or carries a position header of its own, is
// dropped; a replayed payload is accepted up to For plus MaxAge old.
func TestHistoryFrames(t *testing.T) {
	rs := testredis.Start(t)
	tracer := &recordingTracer{}
	cfg := Config{Key: testKey, MaxAge: 2 * time.Second, Tracer: tracer}
	newClient := func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: rs.Addr, ContextTimeoutEnabled: true})
	}
	a := startInstanceConfig(t, "a", newClient(), cfg)
	b := startInstanceConfig(t, "b", newClient(), cfg)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	store, err := streams.New(streams.Config{Client: a.client, Channel: a.relay.Channel, Sharded: a.relay.Sharded()})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := store.NewPublisher(streams.PublisherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	a.relay.SetHistory(pub)

	const dest = "/topic/room.history"
	subA := stomptest.Subscribe(t, a.dial(t), dest)
	subB := stomptest.Subscribe(t, b.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 2)
	poll.Until(t, clientTimeout, func() error {
		if !a.relay.Live(dest) || !b.relay.Live(dest) {
			return fmt.Errorf("%s not live on both instances", dest)
		}
		return nil
	})
	if a.relay.Live("/topic/nobody") {
		t.Error("a destination nobody subscribed to is live")
	}

	// A forged frame: the real key, but the payload names another
	// destination than the channel it is published on.
	other := appendMessage(nil, a.relay.signer, time.Now(), "x", broker.NewMessageParts("x", "/topic/elsewhere", nil, []byte("moved")))
	inject(t, rdb, a.relay, dest, history.AppendFrame(nil, history.Position{Offset: 9, Epoch: "E"}, other))
	waitDrops(t, b, DropMalformed, 1)
	// A payload that brings its own position header.
	own := appendMessage(nil, a.relay.signer, time.Now(), "x",
		broker.NewMessageParts("x", dest, []stompframe.Header{{Name: history.HeaderOffset, Value: "1"}}, []byte("own")))
	inject(t, rdb, a.relay, dest, history.AppendFrame(nil, history.Position{Offset: 9, Epoch: "E"}, own))
	waitDrops(t, b, DropMalformed, 2)

	m := broker.NewMessageParts("x", dest, []stompframe.Header{{Name: "x-k", Value: "v"}}, []byte("kept"))
	m.Trace = testTrace
	if n, ok := a.relay.Append(m, history.Retention{}); n != 0 || !ok {
		t.Fatalf("Append = %d, %v; want 0 (delivered when it comes back), true", n, ok)
	}
	for name, sub := range map[string]*stomp.Subscription{"a": subA, "b": subB} {
		msg := stomptest.Next(t, sub)
		if string(msg.Body) != "kept" || msg.Header.Get(history.HeaderOffset) != "1" || msg.Header.Get(history.HeaderEpoch) == "" || msg.Header.Get("x-k") != "v" {
			t.Errorf("%s: MESSAGE %q offset %q epoch %q x-k %q, want kept at offset 1 of an epoch with x-k v", name, msg.Body,
				msg.Header.Get(history.HeaderOffset), msg.Header.Get(history.HeaderEpoch), msg.Header.Get("x-k"))
		}
	}

	// The trace came back with the frame: one delivery span on each
	// instance, the publishing one too, and none on the frames dropped.
	poll.Until(t, clientTimeout, func() error {
		if got := tracer.delivered(); len(got) != 2 || got[0] != testTrace+" "+dest || got[1] != got[0] {
			return fmt.Errorf("delivery spans = %q, want two of %s on %s", got, testTrace, dest)
		}
		return nil
	})

	// A replay from history: up to For plus MaxAge old.
	old := appendMessage(nil, a.relay.signer, time.Now().Add(-5*time.Minute), a.relay.instance, m)
	if hs, body, ok := b.relay.Decode(dest, old, history.Retention{For: 10 * time.Minute}); !ok || string(body) != "kept" || len(hs) != 1 {
		t.Errorf("Decode of a 5-minute-old payload kept 10 minutes = %v %q %v, want its header, kept, true", hs, body, ok)
	}
	if _, _, ok := b.relay.Decode(dest, old, history.Retention{For: time.Minute}); ok {
		t.Error("Decode accepted a 5-minute-old payload of a history kept 1 minute")
	}
	if _, _, ok := b.relay.Decode("/topic/elsewhere", old, history.Retention{For: 10 * time.Minute}); ok {
		t.Error("Decode accepted a payload for another destination")
	}
}
