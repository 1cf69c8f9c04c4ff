package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/redisclient"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/presence"
)

// newStore is a Store on url, closed when the test ends; stop it earlier
// with Close to play a dead instance, whose lease then runs out.
func newStore(tb testing.TB, url string, ttl time.Duration) *Store {
	tb.Helper()
	c, err := redisclient.New(url)
	if err != nil {
		tb.Fatalf("redisclient.New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	s, err := New(Config{Client: c, LeaseTTL: ttl, Timeout: 2 * time.Second})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// recorder collects the events a store delivers.
type recorder struct {
	mu  sync.Mutex
	evs []presence.Event
}

func (r *recorder) deliver(_ string, evs []presence.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, evs...)
	r.mu.Unlock()
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, fmt.Sprintf("%d %s %s", e.Seq, e.Op, e.Principal))
	}
	return out
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTwoInstancesShareMembers(t *testing.T) {
	url := testredis.Start(t).URL()
	a, b := newStore(t, url, 15*time.Second), newStore(t, url, 15*time.Second)
	var rec recorder
	b.Attach(rec.deliver)
	ctx := context.Background()
	const room = "/topic/room.1"
	steps := []struct {
		s        *Store
		who      string
		sessions int
	}{
		{a, "alice", 1},
		{b, "alice", 2}, // alice on both: no second join
		{a, "bob", 1},
		{a, "alice", 0}, // still on b: no leave
		{b, "alice", 0},
	}
	for _, st := range steps {
		if err := st.s.Set(ctx, room, st.who, st.sessions, "i-"+st.who); err != nil {
			t.Fatalf("Set(%s, %d): %v", st.who, st.sessions, err)
		}
	}
	want := []string{"1 join alice", "2 join bob", "3 leave alice"}
	waitFor(t, "three events", func() bool { return len(rec.got()) >= 3 })
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	snap, err := b.Snapshot(ctx, room, 10)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != 3 || snap.Count != 1 || snap.Members[0].Principal != "bob" || snap.Members[0].Info != "i-bob" {
		t.Errorf("Snapshot = %+v, want seq 3 and bob alone", snap)
	}
}

func TestSnapshotSumsSessionsAndCuts(t *testing.T) {
	url := testredis.Start(t).URL()
	a, b := newStore(t, url, 15*time.Second), newStore(t, url, 15*time.Second)
	ctx := context.Background()
	for _, s := range []*Store{a, b} {
		for _, who := range []string{"c", "a", "b"} {
			if err := s.Set(ctx, "/topic/r", who, 2, "x|y"); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap, err := a.Snapshot(ctx, "/topic/r", 2)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Count != 3 || len(snap.Members) != 2 || snap.Members[0] != (presence.Member{Principal: "a", Sessions: 4, Info: "x|y"}) || snap.Members[1].Principal != "b" {
		t.Errorf("Snapshot(limit 2) = %+v, want a and b of 3, 4 sessions each", snap)
	}
}

// TestDeadInstanceLeaves: an instance that stops renewing (as one killed
// would) loses its members once its lease ends, removed by an instance
// that watches the destination, with one leave each and none for a
// member the living instance also holds, even after Redis forgot the
// script.
func TestDeadInstanceLeaves(t *testing.T) {
	url := testredis.Start(t).URL()
	const ttl = 300 * time.Millisecond
	dead, live := newStore(t, url, ttl), newStore(t, url, ttl)
	var rec recorder
	live.Attach(rec.deliver)
	live.Watched("/topic/r", true)
	ctx := context.Background()
	for _, who := range []string{"ann", "ben"} {
		if err := dead.Set(ctx, "/topic/r", who, 1, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := live.Set(ctx, "/topic/r", "ben", 1, ""); err != nil {
		t.Fatal(err)
	}
	_ = dead.Close()
	// Redis forgets its scripts, as a restart makes it: the renewals'
	// pipeline loads the script again.
	if err := live.client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ann's leave", func() bool { return len(rec.got()) >= 3 })
	if got, want := rec.got(), []string{"1 join ann", "2 join ben", "3 leave ann"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	snap, err := live.Snapshot(ctx, "/topic/r", 10)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Count != 1 || snap.Members[0].Principal != "ben" || snap.Members[0].Sessions != 1 {
		t.Errorf("Snapshot = %+v, want ben with 1 session", snap)
	}
}

// TestCluster runs two instances on Redis Cluster: every key of a
// destination sits in one slot, so the script runs, and events cross.
func TestCluster(t *testing.T) {
	url := testredis.StartCluster(t).URL()
	a, b := newStore(t, url, 15*time.Second), newStore(t, url, 15*time.Second)
	var rec recorder
	b.Attach(rec.deliver)
	ctx := context.Background()
	for i := range 5 {
		if err := a.Set(ctx, fmt.Sprintf("/topic/room.%d", i), "p", 1, ""); err != nil {
			t.Fatalf("Set on room.%d: %v", i, err)
		}
	}
	waitFor(t, "five joins", func() bool { return len(rec.got()) >= 5 })
	if _, ok := a.client.(*redis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", a.client)
	}
}

func TestNewRefuses(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, cfg := range []Config{
		{},
		{Client: c, LeaseTTL: time.Millisecond},
		{Client: c, Timeout: -1},
		{Client: c, Prefix: "a{b"},
	} {
		if s, err := New(cfg); err == nil {
			_ = s.Close()
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
}

// TestLostLeaseRestored: an instance whose lease Redis lost, and whose
// members another instance therefore removed, writes them back at its
// next renewal: a leave, then a join.
func TestLostLeaseRestored(t *testing.T) {
	url := testredis.Start(t).URL()
	const ttl = 300 * time.Millisecond
	a, b := newStore(t, url, ttl), newStore(t, url, ttl)
	var rec recorder
	b.Attach(rec.deliver)
	ctx := context.Background()
	if err := a.Set(ctx, "/topic/r", "ann", 1, "Ann"); err != nil {
		t.Fatal(err)
	}
	// Play a lost lease: the entry ends as an outage would let it, and
	// b removes the shares at once, as it does a dead instance's.
	if err := a.client.ZAdd(ctx, a.keys("/topic/r")[2], redis.Z{Score: 1, Member: a.instance}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.run(ctx, "/topic/r", "renew", "0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ann back", func() bool { return len(rec.got()) >= 3 })
	if got, want := rec.got(), []string{"1 join ann", "2 leave ann", "3 join ann"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	snap, err := b.Snapshot(ctx, "/topic/r", 10)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Count != 1 || snap.Members[0].Info != "Ann" {
		t.Errorf("Snapshot = %+v, want ann with her info", snap)
	}
}

// TestLostEventSyncs: an event numbered but never heard on the channel
// (Pub/Sub is at most once) is found by a watching instance's renewals,
// which tell the tracker with presence.OpSync.
func TestLostEventSyncs(t *testing.T) {
	url := testredis.Start(t).URL()
	s := newStore(t, url, 300*time.Millisecond)
	var mu sync.Mutex
	var syncs []uint64
	s.Attach(func(_ string, evs []presence.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			if e.Op == presence.OpSync {
				syncs = append(syncs, e.Seq)
			}
		}
	})
	s.Watched("/topic/r", true)
	// The counter moves as a script's would, with no message.
	if err := s.client.IncrBy(context.Background(), s.keys("/topic/r")[3], 3).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a sync", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(syncs) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if syncs[0] != 3 {
		t.Errorf("sync at seq %d, want 3", syncs[0])
	}
}
