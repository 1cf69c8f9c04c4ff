package testredis

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testproc"
)

// ClusterSize is the number of masters StartCluster runs: the smallest
// Redis Cluster redis-cli accepts.
const ClusterSize = 3

// MaxClusterPort is the highest port a cluster node may listen on: the
// node's cluster bus listens on its port + 10000, which must be a valid
// port too.
const MaxClusterPort = 55535

// defaultNodeTimeout is cluster-node-timeout when ClusterConfig leaves it
// zero: long enough that a loaded test machine does not fail a healthy
// node over.
const defaultNodeTimeout = 5 * time.Second

// adminTimeout bounds one admin command of the cluster helpers; a node
// that takes longer is treated as down (it may be paused).
const adminTimeout = 500 * time.Millisecond

// ClusterConfig shapes a test cluster. The zero value is StartCluster's
// cluster: ClusterSize masters, no replicas, a 5 s node timeout.
type ClusterConfig struct {
	// Masters is the number of masters. Zero means ClusterSize; fewer
	// than 3 is an error (redis-cli refuses it).
	Masters int
	// Replicas is the number of replicas of each master. Zero means none.
	Replicas int
	// NodeTimeout is cluster-node-timeout: how long a master may be
	// silent before the others mark it failed and one of its replicas
	// takes over. Zero means 5 s; it is rounded down to milliseconds.
	NodeTimeout time.Duration
}

// Cluster is a Redis Cluster owned by a test.
type Cluster struct {
	// Nodes are every node, masters and replicas, each a Server with
	// cluster mode on. Which are masters changes with failovers; ask
	// SlotOwner or Masters.
	Nodes []*Server
	// Addrs are the nodes' host:port, the seed addresses for a client.
	Addrs []string

	tb  testing.TB
	cfg ClusterConfig
}

// URL returns the cluster's seed nodes as a redis+cluster:// URL, the form
// redisclient.New reads.
func (c *Cluster) URL() string {
	return "redis+cluster://" + strings.Join(c.Addrs, ",")
}

// StartCluster starts ClusterSize masters and no replicas; see
// StartClusterConfig.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	return StartClusterConfig(tb, ClusterConfig{})
}

// StartClusterConfig runs cfg.Masters × (1 + cfg.Replicas) redis-server
// processes with `--cluster-enabled yes` on free ports no higher than
// MaxClusterPort (each with its own nodes.conf in its private directory),
// joins them with `redis-cli --cluster create ... --cluster-replicas N
// --cluster-yes`, and waits until every node reports cluster_state:ok,
// knows every other node, and every replica's link to its master is up.
// The processes are killed when the test ends. A missing redis-server or
// redis-cli fails the test.
func StartClusterConfig(tb testing.TB, cfg ClusterConfig) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Fatal("redis-cli not found in PATH: install it with `apt-get install -y redis-tools` " +
			"(Debian package redis-tools, pulled in by redis-server)")
	}
	if cfg.Masters == 0 {
		cfg.Masters = ClusterSize
	}
	if cfg.Masters < 3 || cfg.Replicas < 0 {
		tb.Fatalf("testredis: cluster of %d masters with %d replicas each: want at least 3 masters", cfg.Masters, cfg.Replicas)
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = defaultNodeTimeout
	}
	c := &Cluster{tb: tb, cfg: cfg}
	for range cfg.Masters * (1 + cfg.Replicas) {
		s := startOnPort(tb, clusterPort(tb), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(cfg.NodeTimeout.Milliseconds(), 10))
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(cfg.Replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("testredis: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, s := range c.Nodes {
		err := poll.Wait(StartTimeout, func() error { return c.nodeReady(s) })
		if err != nil {
			tb.Fatalf("testredis: cluster not ready: %v", err)
		}
	}
	return c
}

// clusterPort returns a free port no higher than MaxClusterPort whose bus
// port (+10000) is free too.
func clusterPort(tb testing.TB) int {
	tb.Helper()
	for range 200 {
		p := testproc.FreePort(tb)
		if p > MaxClusterPort {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+10000)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return p
	}
	tb.Fatalf("testredis: no free port at or below %d with a free bus port", MaxClusterPort)
	return 0
}

// nodeReady reports why s is not yet a settled member of the cluster.
func (c *Cluster) nodeReady(s *Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	rdb := adminClient(s.Addr)
	defer rdb.Close()
	info, err := rdb.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("CLUSTER INFO on %s: %w", s.Addr, err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("CLUSTER INFO on %s: %s", s.Addr, firstLine(info))
	}
	if want := "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes)); !strings.Contains(info, want) {
		return fmt.Errorf("CLUSTER INFO on %s: want %s", s.Addr, want)
	}
	repl, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return fmt.Errorf("INFO replication on %s: %w", s.Addr, err)
	}
	if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
		return fmt.Errorf("replica %s: link to its master not up yet", s.Addr)
	}
	return nil
}

func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, Protocol: 2,
		DialTimeout: adminTimeout, ReadTimeout: adminTimeout, WriteTimeout: adminTimeout,
	})
}

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server {
	for _, s := range c.Nodes {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// up returns the nodes that run and are not paused.
func (c *Cluster) up() []*Server {
	var out []*Server
	for _, s := range c.Nodes {
		if s.running() {
			out = append(out, s)
		}
	}
	return out
}

// view is one node's answer to CLUSTER SHARDS: the slot ranges of every
// shard and its nodes with their roles.
type view []redis.ClusterShard

// viewFrom asks s for its view of the cluster.
func viewFrom(s *Server) (view, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	rdb := adminClient(s.Addr)
	defer rdb.Close()
	shards, err := rdb.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS on %s: %w", s.Addr, err)
	}
	return view(shards), nil
}

// masterAddr returns the address of sh's master, or "".
func masterAddr(sh redis.ClusterShard) string {
	for _, n := range sh.Nodes {
		if n.Role == "master" {
			return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
		}
	}
	return ""
}

// owner returns the address of the master serving slot in v, or "".
func (v view) owner(slot int) string {
	for _, sh := range v {
		for _, r := range sh.Slots {
			if int64(slot) >= r.Start && int64(slot) <= r.End {
				return masterAddr(sh)
			}
		}
	}
	return ""
}

// SlotOwner returns the master serving slot, as the first node that
// answers sees it. It fails the test when no node answers.
func (c *Cluster) SlotOwner(slot int) *Server {
	c.tb.Helper()
	var errs []string
	for _, s := range c.up() {
		v, err := viewFrom(s)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if n := c.Node(v.owner(slot)); n != nil {
			return n
		}
		errs = append(errs, fmt.Sprintf("%s: no owner of slot %d", s.Addr, slot))
	}
	c.tb.Fatalf("testredis: owner of slot %d: %s", slot, strings.Join(errs, "; "))
	return nil
}

// Replicas returns the replicas of master that are not marked failed,
// from CLUSTER NODES of the first node that answers. (CLUSTER SLOTS
// leaves out replicas that have not yet reported a replication offset.)
func (c *Cluster) Replicas(master *Server) []*Server {
	c.tb.Helper()
	for _, s := range c.up() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		rdb := adminClient(s.Addr)
		nodes, err := rdb.ClusterNodes(ctx).Result()
		rdb.Close()
		cancel()
		if err != nil {
			continue
		}
		// <id> <ip:port@bus> <flags> <master-id> ...
		var masterID string
		var lines [][]string
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 {
				continue
			}
			lines = append(lines, f)
			if addr, _, _ := strings.Cut(f[1], "@"); addr == master.Addr {
				masterID = f[0]
			}
		}
		var out []*Server
		for _, f := range lines {
			addr, _, _ := strings.Cut(f[1], "@")
			if f[3] == masterID && !strings.Contains(f[2], "fail") {
				if n := c.Node(addr); n != nil {
					out = append(out, n)
				}
			}
		}
		return out
	}
	c.tb.Fatal("testredis: no node answers CLUSTER NODES")
	return nil
}

// Masters returns the nodes that serve slots, as the first node that
// answers sees them.
func (c *Cluster) Masters() []*Server {
	c.tb.Helper()
	for _, s := range c.up() {
		v, err := viewFrom(s)
		if err != nil {
			continue
		}
		var out []*Server
		for _, sh := range v {
			if n := c.Node(masterAddr(sh)); n != nil && len(sh.Slots) > 0 && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out
	}
	c.tb.Fatal("testredis: no node answers CLUSTER SHARDS")
	return nil
}

// MoveSlot moves slot, with its keys, from its master to the master to,
// the way an operator reshards: SETSLOT IMPORTING on the target,
// MIGRATING on the source, MIGRATE of every key, then SETSLOT NODE on the
// target, the source and every other master (replicas refuse SETSLOT and
// learn the move from their masters), so that every master agrees when
// MoveSlot returns.
func (c *Cluster) MoveSlot(slot int, to *Server) {
	c.tb.Helper()
	from := c.SlotOwner(slot)
	if from == to {
		c.tb.Fatalf("testredis: slot %d is already on %s", slot, to.Addr)
	}
	ctx := context.Background()
	src, dst := adminClient(from.Addr), adminClient(to.Addr)
	defer src.Close()
	defer dst.Close()
	srcID, err := src.ClusterMyID(ctx).Result()
	if err != nil {
		c.tb.Fatalf("testredis: CLUSTER MYID on %s: %v", from.Addr, err)
	}
	dstID, err := dst.ClusterMyID(ctx).Result()
	if err != nil {
		c.tb.Fatalf("testredis: CLUSTER MYID on %s: %v", to.Addr, err)
	}
	must := func(rdb *redis.Client, args ...any) {
		c.tb.Helper()
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			c.tb.Fatalf("testredis: %v on %s: %v", args, rdb.Options().Addr, err)
		}
	}
	must(dst, "cluster", "setslot", slot, "importing", srcID)
	must(src, "cluster", "setslot", slot, "migrating", dstID)
	host, port, _ := net.SplitHostPort(to.Addr)
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			c.tb.Fatalf("testredis: CLUSTER GETKEYSINSLOT on %s: %v", from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"migrate", host, port, "", 0, 5000, "keys"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src, args...)
	}
	must(dst, "cluster", "setslot", slot, "node", dstID)
	must(src, "cluster", "setslot", slot, "node", dstID)
	for _, s := range c.Masters() {
		if s == from || s == to || !s.running() {
			continue
		}
		rdb := adminClient(s.Addr)
		must(rdb, "cluster", "setslot", slot, "node", dstID)
		rdb.Close()
	}
}

// WaitFailover waits until every running node reports cluster_state:ok
// and names a master other than old as the owner of slot, and returns
// that master. It fails the test after timeout.
func (c *Cluster) WaitFailover(slot int, old *Server, timeout time.Duration) *Server {
	c.tb.Helper()
	var owner *Server
	err := poll.Wait(timeout, func() error {
		owner = nil
		for _, s := range c.up() {
			if s == old {
				continue
			}
			v, err := viewFrom(s)
			if err != nil {
				return err
			}
			addr := v.owner(slot)
			if addr == "" || addr == old.Addr {
				return fmt.Errorf("%s: slot %d still on %s", s.Addr, slot, old.Addr)
			}
			if owner != nil && owner.Addr != addr {
				return fmt.Errorf("nodes disagree on slot %d: %s and %s", slot, owner.Addr, addr)
			}
			owner = c.Node(addr)
			ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
			rdb := adminClient(s.Addr)
			info, err := rdb.ClusterInfo(ctx).Result()
			rdb.Close()
			cancel()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: %s", s.Addr, firstLine(info))
			}
		}
		if owner == nil {
			return fmt.Errorf("no running node names an owner of slot %d", slot)
		}
		return nil
	})
	if err != nil {
		c.tb.Fatalf("testredis: failover of slot %d away from %s: %v", slot, old.Addr, err)
	}
	return owner
}

// WaitSettled waits until every running node is a settled member of the
// cluster again (see StartClusterConfig), for instance after a paused
// master was resumed and rejoined as a replica.
func (c *Cluster) WaitSettled(timeout time.Duration) {
	c.tb.Helper()
	for _, s := range c.up() {
		err := poll.Wait(timeout, func() error { return c.nodeReady(s) })
		if err != nil {
			c.tb.Fatalf("testredis: cluster not settled: %v", err)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
