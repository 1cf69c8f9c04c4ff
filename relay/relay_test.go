package relay

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
)

// perPublisher is how many messages each publisher sends in
// TestThreeInstances: enough that batches form and order could break.
const perPublisher = 300

// received is what a subscriber got, by publisher.
type received struct {
	seqs map[string][]int // x-pub -> x-seq values in arrival order
	ids  map[string]bool  // message-id values
	dups []string         // message-ids seen twice
}

// collect reads n messages from sub.
func collect(t *testing.T, sub *stomp.Subscription, n int) received {
	t.Helper()
	got := received{seqs: map[string][]int{}, ids: map[string]bool{}}
	for range n {
		m := stomptest.Next(t, sub)
		id := m.Header.Get("message-id")
		if got.ids[id] {
			got.dups = append(got.dups, id)
		}
		got.ids[id] = true
		seq, err := strconv.Atoi(m.Header.Get("x-seq"))
		if err != nil {
			t.Fatalf("x-seq %q: %v", m.Header.Get("x-seq"), err)
		}
		got.seqs[m.Header.Get("x-pub")] = append(got.seqs[m.Header.Get("x-pub")], seq)
	}
	return got
}

// check verifies that every publisher's messages arrived once each, in
// order.
func (got received) check(t *testing.T, who string, pubs ...string) {
	t.Helper()
	if len(got.dups) > 0 {
		t.Errorf("%s: %d message-ids delivered twice, first %s", who, len(got.dups), got.dups[0])
	}
	for _, p := range pubs {
		seqs := got.seqs[p]
		if len(seqs) != perPublisher {
			t.Errorf("%s: got %d messages from %s, want %d", who, len(seqs), p, perPublisher)
			continue
		}
		for i, s := range seqs {
			if s != i {
				t.Errorf("%s: message %d from %s has x-seq %d, want %d (order broken)", who, i, p, s, i)
				break
			}
		}
	}
}

// Three instances on one Redis: a subscriber on A receives every message
// that publishers on B and C send, once each and in each publisher's
// order; a subscriber on B, where one publisher is, gets that publisher's
// messages once (locally, not again through Redis) and C's through Redis.
func TestThreeInstances(t *testing.T) {
	rs := testredis.Start(t)
	a := startInstance(t, "a", rs.Addr)
	b := startInstance(t, "b", rs.Addr)
	c := startInstance(t, "c", rs.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/room.1"
	subA := stomptest.Subscribe(t, a.dial(t), dest)
	subB := stomptest.Subscribe(t, b.dial(t), dest)
	// The relays of A and B, not C's, subscribe to the channel.
	waitSubscribers(t, rdb, a.relay, dest, 2)

	var wg sync.WaitGroup
	for _, p := range []*instance{b, c} {
		conn := p.dial(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perPublisher {
				opts := []func(*frame.Frame) error{
					stomp.SendOpt.Header("x-pub", p.name),
					stomp.SendOpt.Header("x-seq", strconv.Itoa(i)),
				}
				if i == perPublisher-1 {
					opts = append(opts, stomp.SendOpt.Receipt)
				}
				if err := conn.Send(dest, "text/plain", []byte("m"+strconv.Itoa(i)), opts...); err != nil {
					t.Errorf("%s: SEND %d: %v", p.name, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()

	gotA := collect(t, subA, 2*perPublisher)
	gotA.check(t, "subscriber on a", "b", "c")
	gotB := collect(t, subB, 2*perPublisher)
	gotB.check(t, "subscriber on b", "b", "c")

	// Message ids are the receiving broker's: a's own for what crossed
	// to a, so that no one who writes to Redis picks them.
	prefix, _, _ := strings.Cut(a.broker.NextID(), "-")
	for id := range gotA.ids {
		if !strings.HasPrefix(id, prefix+"-") {
			t.Errorf("message-id %s on a is not a's (prefix %s)", id, prefix)
			break
		}
	}
	// Nothing more comes: a duplicate would trail the originals.
	for name, sub := range map[string]*stomp.Subscription{"a": subA, "b": subB} {
		select {
		case m := <-sub.C:
			t.Errorf("subscriber on %s: extra message x-pub=%s x-seq=%s", name, m.Header.Get("x-pub"), m.Header.Get("x-seq"))
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Counted as the relays see it: B and C each published their
	// messages (and the subscribe syncs); A took in both publishers', B
	// only C's.
	if got := a.obs.count(DirectionIn); got != 2*perPublisher {
		t.Errorf("a: relayed in %d, want %d", got, 2*perPublisher)
	}
	if got := b.obs.count(DirectionIn); got != perPublisher {
		t.Errorf("b: relayed in %d, want %d (its own messages are skipped)", got, perPublisher)
	}
	for _, inst := range []*instance{a, b, c} {
		if got := inst.obs.drops(DropQueueFull) + inst.obs.drops(DropRedisError) + inst.obs.drops(DropMalformed); got != 0 {
			t.Errorf("%s: dropped %d, want 0", inst.name, got)
		}
	}
}

// The relays subscribe only to the channels of destinations with local
// subscribers, and unsubscribe after the last one leaves.
func TestSubscribesOnlyToLocalDestinations(t *testing.T) {
	rs := testredis.Start(t)
	a := startInstance(t, "a", rs.Addr)
	b := startInstance(t, "b", rs.Addr)
	_ = startInstance(t, "c", rs.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	channels := func() []string {
		chs, err := rdb.PubSubChannels(context.Background(), DefaultPrefix+"*").Result()
		if err != nil {
			t.Fatalf("PUBSUB CHANNELS: %v", err)
		}
		slices.Sort(chs)
		return chs
	}
	waitChannels := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		poll.Until(t, clientTimeout, func() error {
			if got := channels(); !slices.Equal(got, want) {
				return fmt.Errorf("PUBSUB CHANNELS = %q, want %q", got, want)
			}
			return nil
		})
	}
	if got := channels(); len(got) != 0 {
		t.Fatalf("before any SUBSCRIBE: PUBSUB CHANNELS = %q, want none", got)
	}

	ca := a.dial(t)
	s1 := stomptest.Subscribe(t, ca, "/topic/a")
	s2 := stomptest.Subscribe(t, ca, "/topic/a") // a second local subscriber: no second SUBSCRIBE
	stomptest.Subscribe(t, b.dial(t), "/topic/b")
	waitChannels(a.relay.Channel("/topic/a"), b.relay.Channel("/topic/b"))
	waitSubscribers(t, rdb, a.relay, "/topic/a", 1)

	stomptest.Unsubscribe(t, s1)
	// One local subscriber is left: still subscribed.
	if err := ca.Send("/topic/sync", "", nil, stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	waitChannels(a.relay.Channel("/topic/a"), b.relay.Channel("/topic/b"))
	stomptest.Unsubscribe(t, s2)
	waitChannels(b.relay.Channel("/topic/b"))
}

// Redis killed and restarted during a run: no instance blocks, local
// delivery never stops, messages that cannot cross are counted, and
// cross-instance delivery resumes once Redis is back (the relays
// subscribe again by themselves).
func TestRedisOutage(t *testing.T) {
	rs, a, b, rdb := startPair(t)

	const dest = "/topic/outage"
	pubA, pubB := a.dial(t), b.dial(t)
	subA := stomptest.Subscribe(t, a.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 1)

	send := func(c *stomp.Conn, who string, i int) {
		t.Helper()
		if err := c.Send(dest, "text/plain", []byte(who+strconv.Itoa(i)), stomp.SendOpt.Header("x-from", who), stomp.SendOpt.Receipt); err != nil {
			t.Fatalf("%s: SEND %d: %v", who, i, err)
		}
	}
	// expect reads from subA until a message with the given body.
	expect := func(body string) {
		t.Helper()
		for {
			if m := stomptest.Next(t, subA); string(m.Body) == body {
				return
			}
		}
	}
	send(pubB, "b", 0)
	expect("b0")

	rs.Kill()
	// Local delivery goes on while the relays cannot reach Redis, and the
	// publishers never wait for it: each SEND gets its RECEIPT.
	for i := 1; i <= 20; i++ {
		send(pubA, "a", i)
		expect("a" + strconv.Itoa(i))
		send(pubB, "b", i)
	}
	poll.Until(t, clientTimeout, func() error {
		if n := b.obs.drops(DropRedisError); n == 0 {
			return fmt.Errorf("b: no message counted as dropped during the outage")
		}
		if active, _ := b.obs.inOutage(); !active {
			return fmt.Errorf("b: outage not reported")
		}
		if !b.relay.InOutage() {
			return fmt.Errorf("b: InOutage false during the outage")
		}
		return nil
	})

	rs.Restart()
	// The restarted Redis is empty: the relay of A must subscribe again.
	waitSubscribers(t, rdb, a.relay, dest, 1)
	i := 100
	poll.Until(t, clientTimeout, func() error {
		i++
		send(pubB, "b", i)
		select {
		case m := <-subA.C:
			if m.Err != nil {
				t.Fatalf("subscription: %v", m.Err)
			}
			return nil
		case <-time.After(100 * time.Millisecond):
			return fmt.Errorf("no message from b through Redis yet")
		}
	})
	poll.Until(t, clientTimeout, func() error {
		for _, inst := range []*instance{a, b} {
			if active, entered := inst.obs.inOutage(); active || entered != 1 {
				return fmt.Errorf("%s: outage active %v, entered %d times, want false and 1", inst.name, active, entered)
			}
			if inst.relay.InOutage() {
				return fmt.Errorf("%s: InOutage true once Redis is back", inst.name)
			}
		}
		return nil
	})
	// One outage, logged once when it started and once when it ended,
	// though the subscription connection and the publisher's pool came
	// back at different moments.
	for _, inst := range []*instance{a, b} {
		if got := inst.logs.count("WARN", "unreachable"); got != 1 {
			t.Errorf("%s: %d outage start lines, want 1", inst.name, got)
		}
		if got := inst.logs.count("INFO", "reachable again"); got != 1 {
			t.Errorf("%s: %d outage end lines, want 1", inst.name, got)
		}
	}
}

// A Redis that stops answering without closing its sockets (SIGSTOP):
// the relay finds its subscription connection half-open with a bounded
// PING, reports the channel down, keeps trying, and once Redis answers
// again subscribes anew; messages cross again, sessions never notice,
// and the run of lost subscriptions is logged once each way.
func TestHalfOpenRedis(t *testing.T) {
	rs, a, b, rdb := startPair(t)

	const dest = "/topic/halfopen"
	subA := stomptest.Subscribe(t, a.dial(t), dest)
	waitSubscribers(t, rdb, a.relay, dest, 1)
	pubB := b.dial(t)
	crosses := func() { t.Helper(); crossesEventually(t, pubB, subA, dest) }
	crosses()
	if _, down := a.obs.subscriptions(); down != 0 {
		t.Fatalf("a: %d channels down before the pause, want 0", down)
	}

	rs.Pause()
	poll.Until(t, clientTimeout, func() error {
		if n := a.obs.resubscribes(ResubscribeUnanswered); n == 0 {
			return fmt.Errorf("a: half-open connection not found yet")
		}
		if _, down := a.obs.subscriptions(); down != 1 {
			return fmt.Errorf("a: %d channels down, want 1", down)
		}
		return nil
	})
	rs.Resume()
	crosses()
	poll.Until(t, clientTimeout, func() error {
		if subs, down := a.obs.subscriptions(); subs != 1 || down != 0 {
			return fmt.Errorf("a: %d channels subscribed, %d down; want 1 and 0", subs, down)
		}
		return nil
	})
	if got := a.logs.count("WARN", "subscriptions lost"); got != 1 {
		t.Errorf("a: %d lines for lost subscriptions, want 1", got)
	}
	if got := a.logs.count("INFO", "subscriptions restored"); got != 1 {
		t.Errorf("a: %d lines for restored subscriptions, want 1", got)
	}
}

// A destination subscribed and unsubscribed while Redis is down leaves
// nothing behind that the outage would wait for: once Redis is back the
// outage ends though no subscription connection exists.
func TestOutageEndsWithoutSubscriptions(t *testing.T) {
	rs := testredis.Start(t)
	a := startInstance(t, "a", rs.Addr)
	rs.Kill()
	conn := a.dial(t)
	sub := stomptest.Subscribe(t, conn, "/topic/brief")
	poll.Until(t, clientTimeout, func() error {
		if active, _ := a.obs.inOutage(); !active {
			return fmt.Errorf("outage not reported")
		}
		return nil
	})
	stomptest.Unsubscribe(t, sub)
	if err := conn.Send(stomptest.SyncDestination, "", nil, stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	rs.Restart()
	poll.Until(t, clientTimeout, func() error {
		if active, entered := a.obs.inOutage(); active || entered != 1 {
			return fmt.Errorf("outage active %v, entered %d times; want false and 1", active, entered)
		}
		return nil
	})
}
