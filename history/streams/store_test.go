package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/testredis"
)

// channelOf is the channel the tests publish on: the relay's form for a
// single Redis.
func channelOf(dest string) string { return "stompgate:topic:{" + dest + "}" }

// clusterTag and clusterChannel are the relay's forms on Redis Cluster:
// a shard group as the hash tag, shared by keys and channel.
func clusterTag(dest string) string { return fmt.Sprint(len(dest) % 8) }
func clusterChannel(dest string) string {
	return "stompgate:topic:{" + clusterTag(dest) + "}" + dest
}

// redisTarget is a Redis to run a test against: a single instance or a
// cluster, with the Config the relay would pair with it.
type redisTarget struct {
	name string
	url  string
	cfg  Config
	sub  func(ctx context.Context, c redis.UniversalClient, ch string) *redis.PubSub
}

func single(t *testing.T) redisTarget {
	rs := testredis.Start(t)
	return redisTarget{"single", rs.URL(), Config{Channel: channelOf},
		func(ctx context.Context, c redis.UniversalClient, ch string) *redis.PubSub {
			return c.Subscribe(ctx, ch)
		}}
}

func cluster(t *testing.T) redisTarget {
	cl := testredis.StartCluster(t)
	// No Tag: the keys take the channel's.
	return redisTarget{"cluster", cl.URL(), Config{Channel: clusterChannel, Sharded: true},
		func(ctx context.Context, c redis.UniversalClient, ch string) *redis.PubSub {
			return c.SSubscribe(ctx, ch)
		}}
}

// forEachRedis runs f against a single Redis and a Cluster.
func forEachRedis(t *testing.T, f func(t *testing.T, rt redisTarget)) {
	for _, start := range []func(*testing.T) redisTarget{single, cluster} {
		rt := start(t)
		t.Run(rt.name, func(t *testing.T) { f(t, rt) })
	}
}

// A subscriber that had offset 10 is away while 1,000 messages are
// published through the pipelined Publisher; coming back it gets exactly
// those 1,000, in order, once each, recovered.
func TestRedisAwayAndBack(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rt redisTarget) {
		s := newTestStore(t, rt.url, rt.cfg)
		const dest = "/topic/chat.away"
		var seen history.Position
		for i := 1; i <= 10; i++ {
			seen = mustAppend(t, s, dest, history.Retention{}, fmt.Sprint(i))
		}
		p, err := s.NewPublisher(PublisherConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 11; i <= 1010; i++ {
			if !p.Publish(dest, []byte(fmt.Sprint(i)), history.Retention{}) {
				t.Fatalf("Publish %d refused", i)
			}
		}
		p.Close()
		if st := p.Stats(); st.Published != 1000 || st.Failed != 0 || st.Dropped != 0 {
			t.Fatalf("Publisher stats %+v, want 1000 published", st)
		}
		rd, err := history.NewReader(history.ReaderConfig{Store: s})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		res, err := rd.Since(context.Background(), dest, history.Retention{}, history.Start{Kind: history.StartAt, Offset: seen.Offset + 1, Epoch: seen.Epoch}, time.Now())
		if err != nil || !res.Recovered {
			t.Fatalf("history.Since = recovered %v %q, %v", res.Recovered, res.Reason, err)
		}
		if len(res.Entries) != 1000 {
			t.Fatalf("replayed %d messages, want 1000", len(res.Entries))
		}
		for i, e := range res.Entries {
			if want := uint64(11 + i); e.Offset != want || string(e.Data) != fmt.Sprint(want) {
				t.Fatalf("replay %d = offset %d %q, want %d", i, e.Offset, e.Data, want)
			}
		}
		// One more than -recovery-max is refused, not cut.
		res, _ = rd.Since(context.Background(), dest, history.Retention{}, history.Start{Kind: history.StartAt, Offset: seen.Offset, Epoch: seen.Epoch}, time.Now())
		if res.Recovered || res.Reason != history.ReasonTooMany || len(res.Entries) != 0 {
			t.Fatalf("1001 missed: recovered %v %q %d entries, want too_many and none", res.Recovered, res.Reason, len(res.Entries))
		}
	})
}

// What append.lua publishes is a frame history.AppendFrame would make, with the
// position the append returned.
func TestRedisPublishesFrames(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rt redisTarget) {
		s := newTestStore(t, rt.url, rt.cfg)
		c := newTestClient(t, rt.url)
		const dest = "/topic/frames"
		ctx := context.Background()
		ps := rt.sub(ctx, c, rt.cfg.Channel(dest))
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
		for i := range 300 { // offsets past one varint byte
			payload := fmt.Appendf(nil, "\x02payload %d", i)
			pos := mustAppend(t, s, dest, history.Retention{}, string(payload))
			m, err := ps.ReceiveMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m.Payload != string(history.AppendFrame(nil, pos, payload)) {
				t.Fatalf("published %q, want the frame of %+v", m.Payload, pos)
			}
		}
	})
}

// A position older than what is kept is trimmed, by count and by age.
func TestRedisTrimmed(t *testing.T) {
	rs := testredis.Start(t)
	s := newTestStore(t, rs.URL(), Config{})
	keep := history.Retention{Keep: 100}
	first := mustAppend(t, s, "/topic/t", keep, "1")
	for range 999 {
		mustAppend(t, s, "/topic/t", keep, "m")
	}
	snap := mustTail(t, s, "/topic/t", 1000, keep)
	if res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: 1, Epoch: first.Epoch}, 1000); res.Reason != history.ReasonTrimmed {
		t.Fatalf("offset 1 of 1000 with keep 100: reason %q, want trimmed (first %d)", res.Reason, snap.First)
	}
	if snap.First < 2 || snap.First > 901 {
		t.Fatalf("keep 100 retained from %d, want 901 or somewhat before (MAXLEN ~)", snap.First)
	}
	// By age: an entry older than For is not handed out, and goes.
	young := history.Retention{For: 200 * time.Millisecond}
	a := mustAppend(t, s, "/topic/age", young, "old")
	waitFor(t, func() bool { return mustTail(t, s, "/topic/age", 10, young).First > a.Offset })
	snap = mustTail(t, s, "/topic/age", 10, young)
	if res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: 1, Epoch: a.Epoch}, 10); res.Reason != history.ReasonTrimmed {
		t.Fatalf("aged out: reason %q, want trimmed", res.Reason)
	}
}

// Continuity lost gives a new epoch, and a position of the old one is
// refused with epoch_changed: Redis emptied (FLUSHALL), restarted
// without persistence, the stream gone while the epoch says it should
// be there, another Redis process (a failover) having written it.
func TestRedisEpochChanges(t *testing.T) {
	rs := testredis.Start(t)
	s := newTestStore(t, rs.URL(), Config{})
	c := newTestClient(t, rs.URL())
	ctx := context.Background()
	const dest = "/topic/e"
	meta, stream := s.Keys(dest)
	for _, tc := range []struct {
		name string
		lose func()
	}{
		{"FLUSHALL", func() { c.FlushAll(ctx) }},
		{"restart without persistence", func() { rs.Restart() }},
		{"stream evicted", func() { c.Del(ctx, stream) }},
		{"written by another process", func() { c.HSet(ctx, meta, "r", "0123456789abcdef") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mustAppend(t, s, dest, history.Retention{}, "a")
			mustAppend(t, s, dest, history.Retention{}, "b")
			epochs := s.Stats().Epochs
			tc.lose()
			snap := mustTail(t, s, dest, 10, history.Retention{})
			if snap.Epoch == before.Epoch {
				t.Fatalf("epoch %s kept after continuity was lost", snap.Epoch)
			}
			if res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: 3, Epoch: before.Epoch}, 10); res.Recovered || res.Reason != history.ReasonEpochChanged {
				t.Fatalf("old position: recovered %v %q, want epoch_changed", res.Recovered, res.Reason)
			}
			after := mustAppend(t, s, dest, history.Retention{}, "c")
			if after.Epoch == before.Epoch || after.Offset != 1 {
				t.Fatalf("append after the loss = %+v, want offset 1 of a new epoch", after)
			}
			if s.Stats().Epochs <= epochs {
				t.Fatalf("no epoch counted as started: %+v", s.Stats())
			}
		})
	}
}

// The epoch lives on while the history is merely idle: a client away
// longer than For from a room where nothing was said is still recovered.
func TestRedisIdleKeepsEpoch(t *testing.T) {
	rs := testredis.Start(t)
	s := newTestStore(t, rs.URL(), Config{})
	r := history.Retention{For: 100 * time.Millisecond}
	a := mustAppend(t, s, "/topic/idle", r, "x")
	c := newTestClient(t, rs.URL())
	_, stream := s.Keys("/topic/idle")
	waitFor(t, func() bool { return c.Exists(context.Background(), stream).Val() == 0 })
	snap := mustTail(t, s, "/topic/idle", 10, r)
	if res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: a.Offset + 1, Epoch: a.Epoch}, 10); !res.Recovered {
		t.Fatalf("idle history: %q, want recovered", res.Reason)
	}
	if b := mustAppend(t, s, "/topic/idle", r, "y"); b.Epoch != a.Epoch || b.Offset != a.Offset+1 {
		t.Fatalf("append after idling = %+v, want %d in %s", b, a.Offset+1, a.Epoch)
	}
}

// Several instances publish at full rate while a subscription on
// another recovers through Pub/Sub and the history: no gap, no
// duplicate.
func TestRedisSpliceConcurrentPublishers(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rt redisTarget) {
		s := newTestStore(t, rt.url, rt.cfg)
		const dest = "/topic/chat.splice"
		var seen history.Position
		for range 200 {
			seen = mustAppend(t, s, dest, spliceRetention, "m")
		}
		// Two instances, each with its own client and Publisher.
		const instances, each = 2, 1000
		var pubs []*Publisher
		for range instances {
			is := newTestStore(t, rt.url, rt.cfg)
			p, err := is.NewPublisher(PublisherConfig{BatchSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			pubs = append(pubs, p)
		}
		// The subscribing instance: its Pub/Sub registration confirmed
		// first, frames decoded into live messages.
		ctx := context.Background()
		ps := rt.sub(ctx, newTestClient(t, rt.url), rt.cfg.Channel(dest))
		defer ps.Close()
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		live := make(chan history.Message, instances*each+1)
		var recv sync.WaitGroup
		recv.Add(1)
		go func() {
			defer recv.Done()
			for m := range ps.Channel() {
				pos, payload, ok := history.DecodeFrame(m.Payload)
				if !ok {
					t.Errorf("not a frame: %q", m.Payload)
					continue
				}
				live <- history.Message{Offset: pos.Offset, Epoch: pos.Epoch, Data: []byte(payload)}
			}
		}()
		var wg sync.WaitGroup
		for _, p := range pubs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					for !p.Publish(dest, fmt.Appendf(nil, "p%d", i), spliceRetention) {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		rd, err := history.NewReader(history.ReaderConfig{Store: s, MaxRecovery: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		// The client had everything up to offset 50.
		got, st := splice(t, rd, live, dest, history.Start{Kind: history.StartAt, Offset: 51, Epoch: seen.Epoch}, 200-50+instances*each)
		wg.Wait()
		for _, p := range pubs {
			p.Close()
			if st := p.Stats(); st.Failed != 0 {
				t.Fatalf("publisher: %+v", st)
			}
		}
		_ = ps.Close()
		recv.Wait()
		if !st.Recovered {
			t.Fatalf("not recovered: %q", st.Reason)
		}
		checkRun(t, got, 51, 200-50+instances*each)
	})
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer ok.Close()
	noTimeout := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer noTimeout.Close()
	for _, cfg := range []Config{
		{},
		{Client: noTimeout},
		{Client: ok, Prefix: "a{b"},
		{Client: ok, Timeout: -1},
		{Client: ok, EpochTTL: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) error %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// A failover to a replica, which may have missed the latest writes, is
// a loss of continuity: the promoted master's history has another
// epoch, so a client holding a position of the old one is told
// epoch_changed instead of being handed offsets that could repeat.
func TestRedisClusterFailover(t *testing.T) {
	cl := testredis.StartClusterConfig(t, testredis.ClusterConfig{Replicas: 1, NodeTimeout: time.Second})
	cfg := Config{Channel: clusterChannel, Sharded: true}
	s := newTestStore(t, cl.URL(), cfg)
	const dest = "/topic/chat.failover"
	var before history.Position
	for i := range 50 {
		before = mustAppend(t, s, dest, history.Retention{}, fmt.Sprint(i))
	}
	ctx := context.Background()
	c := newTestClient(t, cl.URL())
	meta, stream := s.Keys(dest)
	slot, err := c.ClusterKeySlot(ctx, meta).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The keys and the channel share a slot, which SPUBLISH from the
	// script needs.
	for _, k := range []string{stream, cfg.Channel(dest)} {
		if other := c.ClusterKeySlot(ctx, k).Val(); other != slot {
			t.Fatalf("%s is in slot %d, %s in %d", k, other, meta, slot)
		}
	}
	old := cl.SlotOwner(int(slot))
	old.Kill()
	cl.WaitFailover(int(slot), old, 30*time.Second)
	var snap history.Snapshot
	waitFor(t, func() bool {
		c.(*redis.ClusterClient).ReloadState(ctx)
		snap, err = s.Tail(ctx, dest, 100, history.Retention{})
		return err == nil
	})
	if snap.Epoch == before.Epoch {
		t.Fatalf("the promoted master continues epoch %s", snap.Epoch)
	}
	res := history.Since(snap, history.Start{Kind: history.StartAt, Offset: before.Offset + 1, Epoch: before.Epoch}, 100)
	if res.Recovered || res.Reason != history.ReasonEpochChanged {
		t.Fatalf("position of the old master: recovered %v %q, want epoch_changed", res.Recovered, res.Reason)
	}
	after := mustAppend(t, s, dest, history.Retention{}, "after")
	if after.Epoch == before.Epoch || after.Offset != 1 {
		t.Fatalf("append after the failover = %+v, want offset 1 of a new epoch", after)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dest, meta string
		cfg              Config
	}{
		{"no channel", "/topic/a", "stompgate:hist:{/topic/a}:m", Config{}},
		{"single Redis channel", "/topic/a", "stompgate:hist:{/topic/a}:m", Config{Channel: channelOf}},
		{"cluster channel", "/topic/ab", "stompgate:hist:{1}/topic/ab:m", Config{Channel: clusterChannel}},
		{"channel without a tag", "/topic/a", "stompgate:hist:{/topic/a}:m",
			Config{Channel: func(d string) string { return "plain:" + d }}},
		{"empty tag is no tag", "/topic/a", "stompgate:hist:{/topic/a}:m",
			Config{Channel: func(d string) string { return "x:{}" + d }}},
		{"Tag wins", "/topic/a", "p:hist:{g}/topic/a:m",
			Config{Prefix: "p:", Channel: clusterChannel, Tag: func(string) string { return "g" }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Client = newTestClient(t, "redis://127.0.0.1:1")
			s, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			meta, stream := s.Keys(tc.dest)
			if meta != tc.meta || stream != strings.TrimSuffix(tc.meta, ":m")+":s" {
				t.Fatalf("Keys(%q) = %q, %q; want %q and its stream", tc.dest, meta, stream, tc.meta)
			}
		})
	}
}
