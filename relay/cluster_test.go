package relay

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
)

// On Redis Cluster the relay uses sharded Pub/Sub; when the master that
// owns a channel's slot restarts, or the slot moves to another master,
// the relay subscribes again by itself, on the master that owns the slot
// now, and messages cross again.
func TestClusterResubscribe(t *testing.T) {
	rc := testredis.StartCluster(t)
	newClient := func() redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs, ContextTimeoutEnabled: true})
	}
	a := startInstanceClient(t, "a", newClient())
	b := startInstanceClient(t, "b", newClient())
	if !a.relay.Sharded() {
		t.Fatal("relay on a cluster client is not sharded")
	}
	rdb := newClient().(*redis.ClusterClient)
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/cluster"
	ch := a.relay.Channel(dest)
	master, err := rdb.MasterForKey(context.Background(), ch)
	if err != nil {
		t.Fatal(err)
	}
	var node *testredis.Server
	for _, n := range rc.Nodes {
		if n.Addr == master.Options().Addr {
			node = n
		}
	}
	if node == nil {
		t.Fatalf("master %s of %s is not one of %v", master.Options().Addr, ch, rc.Addrs)
	}
	direct := redis.NewClient(&redis.Options{Addr: node.Addr})
	t.Cleanup(func() { _ = direct.Close() })
	waitShardSubscribed := func() {
		t.Helper()
		poll.Until(t, 2*clientTimeout, func() error {
			n, err := direct.PubSubShardNumSub(context.Background(), ch).Result()
			if err != nil {
				return err
			}
			if n[ch] != 1 {
				return fmt.Errorf("PUBSUB SHARDNUMSUB %s on %s = %d, want 1", ch, node.Addr, n[ch])
			}
			return nil
		})
	}

	sub := stomptest.Subscribe(t, a.dial(t), dest)
	waitShardSubscribed()
	pub := b.dial(t)
	crosses := func() { t.Helper(); crossesEventually(t, pub, sub, dest) }
	crosses()

	node.Restart()
	waitShardSubscribed()
	crosses()

	// Resharding: the slot moves to another master, which Redis tells
	// the subscribers by unsubscribing them.
	slot, err := rdb.ClusterKeySlot(context.Background(), ch).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rc.Nodes {
		if n != node {
			node = n
			break
		}
	}
	rc.MoveSlot(int(slot), node)
	direct = redis.NewClient(&redis.Options{Addr: node.Addr})
	t.Cleanup(func() { _ = direct.Close() })
	waitShardSubscribed()
	crosses()
	if n := a.obs.resubscribes(ResubscribeMoved); n == 0 {
		t.Errorf("a: no resubscription for a moved slot counted")
	}
	poll.Until(t, clientTimeout, func() error {
		if subs, down := a.obs.subscriptions(); subs != 1 || down != 0 {
			return fmt.Errorf("a: %d channels subscribed, %d down; want 1 and 0", subs, down)
		}
		return nil
	})
}
