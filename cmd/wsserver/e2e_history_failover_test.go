package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/testredis"
)

// TestHistoryClusterFailover kills the Redis Cluster master that holds a
// room's history and channel while a publisher on instance a sends to it
// every 10 ms and a subscriber on instance b, which subscribed with a
// position, reads it. Across the failover the subscriber sees no silent
// gap: every MESSAGE follows the one before it (same epoch, next offset),
// or carries recovered:false with the reason it does not; the promoted
// replica starts a new epoch, which is such a break.
func TestHistoryClusterFailover(t *testing.T) {
	rc := testredis.StartClusterConfig(t, testredis.ClusterConfig{Replicas: 1, NodeTimeout: failoverNodeTimeout})
	pol := failoverPolicy + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    history: {keep: 10000, for: 10m}
`
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startInstances(t, 2, rc.URL(), "-send-limit", "1000", "-policy", path)
	rdb := clusterClient(t, rc)
	const dest = "/topic/chat.failover"
	slot := keySlot(t, rdb, c.apps[0].relay.Channel(dest))

	subConn := dialStomp(t, wsURL(c.bases[1]))
	sub := subscribeAt(t, subConn, dest, "next", "")
	c.waitRelaySubscribed(t, rdb, dest, true)
	pub := dialStomp(t, wsURL(c.bases[0]))

	stop := make(chan struct{})    // ends the publisher
	drained := make(chan struct{}) // ends the reader
	var mu sync.Mutex
	var got []*stomp.Message
	var wg sync.WaitGroup
	var pwg sync.WaitGroup
	pwg.Add(1)
	wg.Add(1)
	go func() {
		defer pwg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if err := pub.Send(dest, "text/plain", []byte("f"+strconv.Itoa(i)), nil); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case m := <-sub.C:
				if m == nil || m.Err != nil {
					t.Errorf("subscription ended: %v", m)
					return
				}
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			case <-drained:
				return
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	for count() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	master := rc.SlotOwner(slot)
	master.Kill()
	killedAt := time.Now()
	promoted := rc.WaitFailover(slot, master, failoverWait)
	failedOverAt := time.Now()
	before := count()
	waitFor(t, resumeWait, func() error {
		if n := count(); n < before+100 {
			return fmt.Errorf("%d messages since the failover, want 100", n-before)
		}
		return nil
	})
	close(stop)
	pwg.Wait()
	// Read what is still on its way, so that the client's goroutines end.
	waitFor(t, clientTimeout, func() error {
		n := count()
		time.Sleep(300 * time.Millisecond)
		if count() != n {
			return fmt.Errorf("still receiving")
		}
		return nil
	})
	close(drained)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	told, epochs := 0, 1
	for i := 1; i < len(got); i++ {
		prev, cur := positionOf(t, got[i-1]), positionOf(t, got[i])
		if cur.epoch != prev.epoch {
			epochs++
		}
		if cur.epoch == prev.epoch && cur.offset == prev.offset+1 {
			continue
		}
		if got[i].Header.Get(history.HeaderRecovered) != "false" {
			t.Errorf("silent gap: %q at %+v follows %q at %+v, and is not marked recovered:false", got[i].Body, cur, got[i-1].Body, prev)
			continue
		}
		told++
	}
	if epochs < 2 || told < 1 {
		t.Errorf("%d epochs and %d breaks told, want a new epoch after the failover (the promoted replica is another Redis process) and its break told", epochs, told)
	}
	t.Logf("master %s killed; %s serves slot %d after %v; %d messages read, %d epochs, %d breaks each told recovered:false",
		master.Addr, promoted.Addr, slot, failedOverAt.Sub(killedAt).Round(time.Millisecond), len(got), epochs, told)
}
