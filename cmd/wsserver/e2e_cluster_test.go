package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/redisclient"
	"github.com/stompgate/stompgate/internal/testredis"
)

// shardNumSub asks the master that owns channel's slot for its number of
// shard-channel subscribers (PUBSUB SHARDNUMSUB is answered per node).
func shardNumSub(rdb redis.UniversalClient, channel string) (map[string]int64, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return nil, fmt.Errorf("not a cluster client: %T", rdb)
	}
	ctx := context.Background()
	node, err := cc.MasterForKey(ctx, channel)
	if err != nil {
		return nil, err
	}
	return node.PubSubShardNumSub(ctx, channel).Result()
}

// clusterClient is a client for the cluster's URL, built as the server
// builds its own.
func clusterClient(t *testing.T, c *testredis.Cluster) redis.UniversalClient {
	t.Helper()
	rdb, err := redisclient.New(c.URL())
	if err != nil {
		t.Fatalf("redisclient.New(%s): %v", c.URL(), err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestClusterHandshakeLimit runs two instances on a real Redis Cluster of
// three masters. Many client IPs (told to the server by a trusted proxy
// header) each get handshakeBurst handshakes, alternating between the
// instances, and then 429: the limiter's keys, one hash slot per IP,
// spread over the masters and every decision is right.
func TestClusterHandshakeLimit(t *testing.T) {
	rc := testredis.StartCluster(t)
	// Each IP's handshakes come one after another, so every one is
	// decided by Redis; on a loaded machine a decision can wait longer
	// than the 50 ms defaults to be sent or answered, and such a key,
	// busy lately, is refused locally instead (see handshake.Limiter).
	c := startInstances(t, 2, rc.URL(), "-trusted-proxies", "127.0.0.1/32",
		"-redis-queue-wait", "2s", "-redis-timeout", "2s")

	const ips = 24
	for i := range ips {
		ip := fmt.Sprintf("198.51.100.%d", i+1)
		for n := range handshakeBurst + 1 {
			base := c.bases[n%len(c.bases)]
			req, err := http.NewRequest(http.MethodGet, base+"/ws", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Real-IP", ip)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s request %d: %v", ip, n+1, err)
			}
			resp.Body.Close()
			// A plain GET passes the limiter and fails the upgrade; only
			// the limiter answers 429.
			limited := resp.StatusCode == http.StatusTooManyRequests
			if want := n == handshakeBurst; limited != want {
				t.Fatalf("%s request %d: got status %d, want 429 %v", ip, n+1, resp.StatusCode, want)
			}
		}
	}
	// The keys are spread over the masters.
	rdb := clusterClient(t, rc)
	cc := rdb.(*redis.ClusterClient)
	var (
		mu       sync.Mutex // ForEachMaster calls in parallel
		withKeys []string
	)
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, node *redis.Client) error {
		n, err := node.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if n > 0 {
			mu.Lock()
			withKeys = append(withKeys, node.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("DBSIZE on the masters: %v", err)
	}
	if len(withKeys) < 2 {
		t.Errorf("limiter keys of %d IPs on %d master(s) %v, want at least 2", ips, len(withKeys), withKeys)
	}
	for _, base := range c.bases {
		m := scrape(t, base)
		if got := m["stompgate_handshake_limiter_fallback"]; got != 0 {
			t.Errorf("%s: limiter on its fallback store", base)
		}
		if got := m[`stompgate_handshake_limiter_store_errors_total{store="redis"}`]; got != 0 {
			t.Errorf("%s: %v Redis store errors, want 0", base, got)
		}
	}
}

// TestClusterRelay runs two instances with -relay redis on a real Redis
// Cluster: the relay uses sharded Pub/Sub (SSUBSCRIBE on the master that
// owns each channel's slot, SPUBLISH), and messages cross from B to a
// subscriber on A on destinations spread over the shards.
func TestClusterRelay(t *testing.T) {
	rc := testredis.StartCluster(t)
	c := startInstances(t, 2, rc.URL())
	if !c.apps[0].relay.Sharded() {
		t.Fatal("relay on a redis+cluster:// URL is not sharded")
	}
	rdb := clusterClient(t, rc)
	cc := rdb.(*redis.ClusterClient)

	subConn := dialStomp(t, wsURL(c.bases[0]))
	pub := dialStomp(t, wsURL(c.bases[1]))
	masters := map[string]bool{}
	for i := range 8 {
		dest := fmt.Sprintf("/topic/room.%d", i)
		sub := subscribe(t, subConn, dest)
		ch := c.apps[0].relay.Channel(dest)
		if !strings.HasPrefix(ch, "stompgate:topic:{") {
			t.Fatalf("Channel(%s) = %q, want a stompgate:topic:{group} name", dest, ch)
		}
		waitFor(t, clientTimeout, func() error {
			n, err := shardNumSub(rdb, ch)
			if err != nil {
				return err
			}
			if n[ch] != 1 {
				return fmt.Errorf("PUBSUB SHARDNUMSUB %s = %d, want 1", ch, n[ch])
			}
			return nil
		})
		node, err := cc.MasterForKey(context.Background(), ch)
		if err != nil {
			t.Fatal(err)
		}
		masters[node.Options().Addr] = true

		body := "across " + dest
		if err := pub.Send(dest, "text/plain", []byte(body), nil); err != nil {
			t.Fatalf("SEND %s: %v", dest, err)
		}
		if m := nextMessage(t, sub); string(m.Body) != body {
			t.Errorf("%s: got %q, want %q", dest, m.Body, body)
		}
	}
	if len(masters) < 2 {
		t.Errorf("8 destinations' channels on %d master(s), want at least 2", len(masters))
	}
	m := scrape(t, c.bases[0])
	if got := m[`stompgate_relay_messages_total{direction="in"}`]; got < 8 {
		t.Errorf("instance a: relayed in %v, want at least 8", got)
	}
}
