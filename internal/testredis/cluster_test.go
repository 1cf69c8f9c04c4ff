package testredis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
)

// The cluster answers through a cluster client: keys in different slots
// land on different masters, and each master owns some slots.
func TestStartCluster(t *testing.T) {
	c := StartCluster(t)
	if got := len(c.Addrs); got != ClusterSize {
		t.Fatalf("got %d nodes, want %d", got, ClusterSize)
	}
	if got, want := c.URL(), "redis+cluster://"+c.Addrs[0]+","+c.Addrs[1]+","+c.Addrs[2]; got != want {
		t.Errorf("URL() = %q, want %q", got, want)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer rdb.Close()
	ctx := context.Background()
	masters := map[string]bool{}
	for _, key := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		m, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			t.Fatalf("MasterForKey(%s): %v", key, err)
		}
		masters[m.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Errorf("8 keys landed on %d master(s), want at least 2", len(masters))
	}
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	if len(shards) < ClusterSize {
		t.Errorf("CLUSTER SHARDS lists %d shards, want at least %d", len(shards), ClusterSize)
	}
}

// A cluster with replicas on ports the cluster bus can use; a slot moved
// by MoveSlot is served by its new master on every node; a paused master
// is failed over to its replica and rejoins as a replica when resumed.
func TestClusterReplicasMoveFailover(t *testing.T) {
	c := StartClusterConfig(t, ClusterConfig{Replicas: 1, NodeTimeout: 2 * time.Second})
	if got, want := len(c.Nodes), 2*ClusterSize; got != want {
		t.Fatalf("got %d nodes, want %d", got, want)
	}
	for _, s := range c.Nodes {
		if s.port > MaxClusterPort {
			t.Errorf("node on port %d, above %d", s.port, MaxClusterPort)
		}
	}
	masters := c.Masters()
	if len(masters) != ClusterSize {
		t.Fatalf("got %d masters, want %d", len(masters), ClusterSize)
	}

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	defer rdb.Close()
	ctx := context.Background()
	const key = "{moved}k"
	n, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	slot := int(n)
	from := c.SlotOwner(slot)
	var to *Server
	for _, m := range masters {
		if m != from {
			to = m
			break
		}
	}
	if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
	c.MoveSlot(slot, to)
	for _, s := range c.Nodes {
		poll.Until(t, 10*time.Second, func() error {
			v, err := viewFrom(s)
			if err != nil {
				return err
			}
			if got := v.owner(slot); got != to.Addr {
				return fmt.Errorf("%s: slot %d on %s, want %s", s.Addr, slot, got, to.Addr)
			}
			return nil
		})
	}
	if got, err := rdb.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Errorf("GET %s after the move = %q, %v; want v", key, got, err)
	}

	replicas := c.Replicas(to)
	if len(replicas) != 1 {
		v, _ := viewFrom(to)
		t.Fatalf("master %s has %d replicas, want 1: %+v", to.Addr, len(replicas), v)
	}
	to.Pause()
	if got := c.WaitFailover(slot, to, 30*time.Second); got != replicas[0] {
		t.Errorf("slot %d failed over to %s, want the replica %s", slot, got.Addr, replicas[0].Addr)
	}
	to.Resume()
	c.WaitSettled(30 * time.Second)
	// The old master turns replica when it hears of the failover, and the
	// node Replicas asks hears of that by gossip: wait for both.
	poll.Until(t, 30*time.Second, func() error {
		if got := c.Replicas(replicas[0]); len(got) != 1 || got[0] != to {
			return fmt.Errorf("after Resume the old master is not the replica of the new one: replicas %v", got)
		}
		return nil
	})
}
