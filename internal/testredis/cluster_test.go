package testredis

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
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
