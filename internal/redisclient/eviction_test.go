package redisclient

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
)

// The start-up check refuses a Redis that evicts, accepts noeviction,
// and says plainly when it could not ask.
func TestCheckNoEviction(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		want   string // the EvictionError's policy; empty: no error
	}{
		{"noeviction", "noeviction", ""},
		{"allkeys-lru", "allkeys-lru", "allkeys-lru"},
		{"volatile-ttl", "volatile-ttl", "volatile-ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := testredis.Start(t, "--maxmemory-policy", tc.policy)
			c := redis.NewClient(&redis.Options{Addr: rs.Addr})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := CheckNoEviction(ctx, c)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckNoEviction = %v, want nil", err)
				}
				return
			}
			ee, ok := errors.AsType[*EvictionError](err)
			if !ok || ee.Policy != tc.want || ee.Addr != rs.Addr {
				t.Fatalf("CheckNoEviction = %v, want an EvictionError for %s at %s", err, tc.want, rs.Addr)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		rs := testredis.Start(t)
		c := redis.NewClient(&redis.Options{Addr: rs.Addr, MaxRetries: -1})
		defer c.Close()
		rs.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := CheckNoEviction(ctx, c); !errors.Is(err, ErrEvictionUnchecked) {
			t.Fatalf("CheckNoEviction with Redis gone = %v, want ErrEvictionUnchecked", err)
		}
	})
}

// A cluster is checked node by node: one evicting master is enough to
// refuse.
func TestCheckNoEvictionCluster(t *testing.T) {
	cl := testredis.StartCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cl.Masters()[0].Addr}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := CheckNoEviction(ctx, c); err != nil {
		t.Fatalf("CheckNoEviction on a noeviction cluster = %v", err)
	}
	last := cl.Masters()[len(cl.Masters())-1]
	n := redis.NewClient(&redis.Options{Addr: last.Addr})
	defer n.Close()
	if err := n.ConfigSet(ctx, "maxmemory-policy", "allkeys-lfu").Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := errors.AsType[*EvictionError](CheckNoEviction(ctx, c)); !ok {
		t.Fatalf("CheckNoEviction with %s on allkeys-lfu: want an EvictionError", last.Addr)
	}
}
