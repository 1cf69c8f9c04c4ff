package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
)

// failoverNodeTimeout is the test cluster's cluster-node-timeout, as an
// operator would set it for fast failovers.
const failoverNodeTimeout = 2 * time.Second

// failoverWait bounds a failover and a cluster settling after one: the
// replica needs the node timeout, a vote and its own delay.
const failoverWait = 30 * time.Second

// resumeWait bounds how long delivery may take to resume after an event
// before the test fails. It is a bound for a stuck relay, not the
// measured figure (which the test logs).
const resumeWait = 10 * time.Second

// trafficInterval paces each publisher: 20 messages a second.
const trafficInterval = 50 * time.Millisecond

// failoverPolicy is testPolicy with a handshake zone no test step comes
// near: the test makes handshakes only to see which store decides them.
var failoverPolicy = strings.Replace(testPolicy, "rate: 30r/m\n    burst: 5", "rate: 100r/s\n    burst: 100", 1)

// traffic is a publisher and a subscriber on one destination on each
// instance, the publishers sending at a steady pace; it records when each
// message was sent and which ones crossed to the other instance.
type traffic struct {
	names []string // instance names, "a", "b"
	stop  chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	sent map[string][]time.Time       // publisher -> send time by x-seq
	got  map[string]map[int]time.Time // "sub<-pub" -> x-seq -> arrival, cross-instance only
	errs []string
}

// startTraffic connects a subscriber and a publisher to dest on every
// instance, waits until the relays are subscribed, and starts the
// publishers. Stop ends it.
func startTraffic(t *testing.T, c cluster, rdb redis.UniversalClient, dest string) *traffic {
	t.Helper()
	tr := &traffic{stop: make(chan struct{}), sent: map[string][]time.Time{}, got: map[string]map[int]time.Time{}}
	subs := map[string]*stomp.Subscription{}
	pubs := map[string]*stomp.Conn{}
	for i, base := range c.bases {
		name := string(rune('a' + i))
		tr.names = append(tr.names, name)
		subs[name] = subscribe(t, dialStomp(t, wsURL(base)), dest)
		// The publisher asks for heart-beats: it receives nothing else,
		// and go-stomp closes a connection that reads nothing for the
		// server's heart-beat interval plus 5 s, even when it offered
		// to receive none.
		pubs[name] = dialStomp(t, wsURL(base), stomp.ConnOpt.HeartBeat(0, time.Second))
	}
	c.waitRelaySubscribed(t, rdb, dest, true)
	for _, sub := range tr.names {
		for _, pub := range tr.names {
			if pub != sub {
				tr.got[sub+"<-"+pub] = map[int]time.Time{}
			}
		}
	}
	for _, name := range tr.names {
		tr.wg.Add(2)
		go tr.publish(name, pubs[name], dest)
		go tr.receive(name, subs[name])
	}
	return tr
}

func (tr *traffic) publish(name string, conn *stomp.Conn, dest string) {
	defer tr.wg.Done()
	tick := time.NewTicker(trafficInterval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-tr.stop:
			return
		case <-tick.C:
		}
		tr.mu.Lock()
		tr.sent[name] = append(tr.sent[name], time.Now())
		tr.mu.Unlock()
		err := conn.Send(dest, "text/plain", []byte(name+strconv.Itoa(seq)),
			stomp.SendOpt.Header("x-pub", name), stomp.SendOpt.Header("x-seq", strconv.Itoa(seq)))
		if err != nil {
			tr.fail("publisher %s: SEND %d: %v", name, seq, err)
			return
		}
	}
}

func (tr *traffic) receive(name string, sub *stomp.Subscription) {
	defer tr.wg.Done()
	for {
		select {
		case <-tr.stop:
			return
		case m, ok := <-sub.C:
			if !ok {
				tr.fail("subscriber %s: subscription ended", name)
				return
			}
			if m.Err != nil {
				tr.fail("subscriber %s: %v", name, m.Err)
				return
			}
			pub := m.Header.Get("x-pub")
			if pub == name {
				continue
			}
			seq, err := strconv.Atoi(m.Header.Get("x-seq"))
			if err != nil {
				tr.fail("subscriber %s: x-seq %q", name, m.Header.Get("x-seq"))
				continue
			}
			tr.mu.Lock()
			tr.got[name+"<-"+pub][seq] = time.Now()
			tr.mu.Unlock()
		}
	}
}

func (tr *traffic) fail(format string, args ...any) {
	tr.mu.Lock()
	tr.errs = append(tr.errs, fmt.Sprintf(format, args...))
	tr.mu.Unlock()
}

// Stop ends the publishers and subscribers' readers and reports what
// went wrong on the client side: an error here is a session dropped.
func (tr *traffic) Stop(t *testing.T) {
	t.Helper()
	close(tr.stop)
	tr.wg.Wait()
	for _, e := range tr.errs {
		t.Error(e)
	}
}

// resumed returns, once every subscriber has received from every other
// instance a message sent at or after at, how long after at the first such
// message was sent (the largest over the pairs), and how many messages
// sent before it, since at-1s, were lost on the way. It fails the test if
// that does not happen within resumeWait.
func (tr *traffic) resumed(t *testing.T, at time.Time) (after time.Duration, lost int) {
	t.Helper()
	waitFor(t, resumeWait, func() error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		after, lost = 0, 0
		for pair, got := range tr.got {
			pub := pair[strings.Index(pair, "<-")+2:]
			first := -1
			for seq, sentAt := range tr.sent[pub] {
				if _, ok := got[seq]; ok && !sentAt.Before(at) {
					first = seq
					break
				}
			}
			if first < 0 {
				return fmt.Errorf("%s: nothing sent since the event has crossed yet", pair)
			}
			after = max(after, tr.sent[pub][first].Sub(at))
			for seq := first - 1; seq >= 0 && !tr.sent[pub][seq].Before(at.Add(-time.Second)); seq-- {
				if _, ok := got[seq]; !ok {
					lost++
				}
			}
		}
		return nil
	})
	return after, lost
}

// fallbackAfterHandshakes makes plain GET /ws requests to base (they pass
// the handshake limiter and fail the upgrade) until the limiter's fallback
// gauge reads want.
func fallbackAfterHandshakes(t *testing.T, base string, want float64) {
	t.Helper()
	waitFor(t, failoverWait, func() error {
		resp, err := http.Get(base + "/ws")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if got := scrape(t, base)["stompgate_handshake_limiter_fallback"]; got != want {
			return fmt.Errorf("handshake limiter fallback = %v, want %v", got, want)
		}
		return nil
	})
}

// keySlot asks the cluster for key's hash slot.
func keySlot(t *testing.T, rdb redis.UniversalClient, key string) int {
	t.Helper()
	n, err := rdb.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
	}
	return int(n)
}

// TestClusterFailover runs two instances with -relay redis on a real
// Redis Cluster of three masters and three replicas (cluster-node-timeout
// 2000), with a subscriber and a publisher at 20 msg/s on each instance,
// and does to the cluster what operators and failures do, in turn, on the
// master that serves the topic's channel:
//
//   - moves the channel's slot to another master;
//   - stops that master with SIGSTOP until its replica has taken over,
//     then lets it continue (it rejoins as a replica);
//   - kills the new master with SIGKILL, so the old one is promoted back.
//
// After each step cross-instance delivery resumes, no client session
// drops, and every channel ends with a live subscription. The SIGSTOP
// step is on the master that also holds the handshake limiter's keys for
// 127.0.0.1: the limiter falls back to memory while it is stopped and
// returns to Redis, on the promoted replica, after the failover. The
// measured resume times are logged (see BENCHMARKS.md).
func TestClusterFailover(t *testing.T) {
	rc := testredis.StartClusterConfig(t, testredis.ClusterConfig{Replicas: 1, NodeTimeout: failoverNodeTimeout})
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(failoverPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startInstances(t, 2, rc.URL(), "-send-limit", "100", "-policy", policy)
	rdb := clusterClient(t, rc)

	// The handshake limiter's keys for 127.0.0.1 share one slot; pick a
	// destination whose channel is on another master, and move the
	// channel's slot to the limiter's master in the first step.
	hsMaster := rc.SlotOwner(keySlot(t, rdb, "stompgate:hs:{127.0.0.1}:ws_handshake"))
	var dest string
	var slot int
	for i := 0; ; i++ {
		dest = "/topic/failover." + strconv.Itoa(i)
		slot = keySlot(t, rdb, c.apps[0].relay.Channel(dest))
		if rc.SlotOwner(slot) != hsMaster {
			break
		}
	}
	tr := startTraffic(t, c, rdb, dest)

	// Step 1: reshard.
	waitForCrossing(t, tr)
	rc.MoveSlot(slot, hsMaster)
	movedAt := time.Now()
	after, lost := tr.resumed(t, movedAt)
	t.Logf("slot %d moved: delivery resumed with messages sent %v after the move; %d lost around it", slot, after.Round(time.Millisecond), lost)

	// Step 2: SIGSTOP the channel's master, the limiter's too.
	stopped := rc.SlotOwner(slot)
	if stopped != hsMaster {
		t.Fatalf("slot %d on %s after the move, want %s", slot, stopped.Addr, hsMaster.Addr)
	}
	stopped.Pause()
	pausedAt := time.Now()
	fallbackAfterHandshakes(t, c.bases[0], 1)
	promoted := rc.WaitFailover(slot, stopped, failoverWait)
	failedOverAt := time.Now()
	after, lost = tr.resumed(t, failedOverAt)
	t.Logf("master %s stopped: cluster reported %s serving slot %d after %v; delivery resumed with messages sent %v after that; %d lost in the second before",
		stopped.Addr, promoted.Addr, slot, failedOverAt.Sub(pausedAt).Round(time.Millisecond), after.Round(time.Millisecond), lost)
	fallbackAfterHandshakes(t, c.bases[0], 0)
	limiterBackAt := time.Now()
	t.Logf("handshake limiter back on Redis %v after the failover was reported", limiterBackAt.Sub(failedOverAt).Round(time.Millisecond))
	stopped.Resume()
	rc.WaitSettled(failoverWait)
	after, _ = tr.resumed(t, time.Now())
	t.Logf("old master resumed and rejoined as a replica; delivery goes on (messages sent %v after)", after.Round(time.Millisecond))

	// Step 3: SIGKILL the promoted master; the resumed one takes over.
	promoted.Kill()
	killedAt := time.Now()
	back := rc.WaitFailover(slot, promoted, failoverWait)
	failedOverAt = time.Now()
	after, lost = tr.resumed(t, failedOverAt)
	t.Logf("master %s killed: cluster reported %s serving slot %d after %v; delivery resumed with messages sent %v after that; %d lost in the second before",
		promoted.Addr, back.Addr, slot, failedOverAt.Sub(killedAt).Round(time.Millisecond), after.Round(time.Millisecond), lost)

	tr.Stop(t)
	for i, base := range c.bases {
		if got := c.apps[i].stomp.Sessions(); got != 2 {
			t.Errorf("instance %d: %d sessions, want its subscriber and publisher", i, got)
		}
		waitFor(t, clientTimeout, func() error {
			if got := scrape(t, base)["stompgate_relay_subscriptions_down"]; got != 0 {
				return fmt.Errorf("instance %d: %v channels without a live subscription, want 0", i, got)
			}
			return nil
		})
		m := scrape(t, base)
		if got := m.sum("stompgate_sessions_closed_total"); got != 0 {
			for k, v := range m {
				if strings.HasPrefix(k, "stompgate_sessions_closed_total") && v > 0 {
					t.Errorf("instance %d: %s = %v, want 0", i, k, v)
				}
			}
		}
		if got := m[`stompgate_relay_resubscribes_total{reason="moved"}`]; got < 1 {
			t.Errorf("instance %d: %v resubscriptions for a moved slot, want at least 1", i, got)
		}
		if got := m[`stompgate_relay_resubscribes_total{reason="unanswered"}`] + m[`stompgate_relay_resubscribes_total{reason="connection"}`]; got < 2 {
			t.Errorf("instance %d: %v resubscriptions for a stopped or killed master, want at least 2", i, got)
		}
	}
}

// waitForCrossing waits until messages cross both ways.
func waitForCrossing(t *testing.T, tr *traffic) {
	t.Helper()
	tr.resumed(t, time.Now())
}
