package testredis

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/poll"
)

// ClusterSize is the number of masters StartCluster runs: the smallest
// Redis Cluster redis-cli accepts without replicas.
const ClusterSize = 3

// Cluster is a Redis Cluster of ClusterSize masters and no replicas, owned
// by a test.
type Cluster struct {
	// Nodes are the masters, each a Server with cluster mode on.
	Nodes []*Server
	// Addrs are the masters' host:port, the seed addresses for a client.
	Addrs []string
}

// URL returns the cluster's seed nodes as a redis+cluster:// URL, the form
// handshake.NewUniversalClient reads.
func (c *Cluster) URL() string {
	return "redis+cluster://" + strings.Join(c.Addrs, ",")
}

// StartCluster runs ClusterSize redis-server processes with
// `--cluster-enabled yes` (each with its own nodes.conf in its private
// directory), joins them with `redis-cli --cluster create ...
// --cluster-replicas 0 --cluster-yes`, and waits until every node reports
// cluster_state:ok. The processes are killed when the test ends. A missing
// redis-server or redis-cli fails the test.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		tb.Fatal("redis-cli not found in PATH: install it with `apt-get install -y redis-tools` " +
			"(Debian package redis-tools, pulled in by redis-server)")
	}
	c := &Cluster{}
	for range ClusterSize {
		s := Start(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("testredis: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, s := range c.Nodes {
		err := poll.Wait(StartTimeout, func() error {
			out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", fmt.Sprint(s.port), "cluster", "info").CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			if !strings.Contains(string(out), "cluster_state:ok") {
				return fmt.Errorf("CLUSTER INFO on %s: %s", s.Addr, firstLine(string(out)))
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("testredis: cluster not ready: %v", err)
		}
	}
	return c
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
