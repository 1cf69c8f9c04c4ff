package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
)

// herdEnv turns on TestHistoryHerd, a measurement of a thousand
// sessions: too heavy for every run of the suite on a shared machine.
const herdEnv = "STOMPGATE_HISTORY_HERD"

// TestHistoryHerd measures the time from SUBSCRIBE to caught up for
// 1,000 WebSocket sessions on one instance (Redis Streams history,
// -relay redis) that each recover the same 100 missed messages of one
// room at once, the room holding 1,000. It asserts what each got (all
// 100, in order, recovered:true) and logs the percentiles; it asserts no
// duration. Set STOMPGATE_HISTORY_HERD=1 to run it.
func TestHistoryHerd(t *testing.T) {
	if os.Getenv(herdEnv) == "" {
		t.Skipf("a measurement of 1,000 sessions; set %s=1 to run it", herdEnv)
	}
	const clients, kept, missed = 1000, 1000, 100
	rs := testredis.Start(t)
	pol := strings.Replace(testPolicy, "rate: 30r/m\n    burst: 5", "rate: 100000r/s\n    burst: 100000", 1) + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    history: {keep: 1000, for: 10m}
`
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startAppWith(t, appOptions{env: map[string]string{"WSSERVER_POLICY": path}},
		"-redis-url", rs.URL(), "-relay", "redis", "-admit-rate", "-1", "-reconnect-limit", "0", "-send-limit", "1000000",
		"-inbound-frames", "1000000", "-inbound-bytes", "100000000")
	const dest = "/topic/chat.herd"
	pub := dialStomp(t, wsURL(base))
	body := strings.Repeat("b", 100)
	for i := range kept {
		if err := pub.Send(dest, "text/plain", []byte(strconv.Itoa(i)+":"+body), nil); err != nil {
			t.Fatal(err)
		}
	}
	waitAppended(t, kept, base)
	probe := stomptest.DialRaw(t, wsURL(base))
	probe.Connect()
	probe.Send("SUBSCRIBE\nid:p\ndestination:" + dest + "\nx-stream-offset:last\n\n\x00")
	last := probe.Expect("MESSAGE")
	lastOff, _ := strconv.ParseUint(last.Get(history.HeaderOffset), 10, 64)
	epoch := last.Get(history.HeaderEpoch)
	from := lastOff - missed + 1

	conns := make([]*stomptest.Raw, clients)
	for i := range conns {
		conns[i] = stomptest.DialRaw(t, wsURL(base))
		conns[i].Connect()
	}
	took := make([]time.Duration, clients)
	errs := make([]error, clients)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			c.Send(fmt.Sprintf("SUBSCRIBE\nid:h\ndestination:%s\nx-stream-offset:%d\nx-stream-epoch:%s\n\n\x00", dest, from, epoch))
			for n := range missed {
				f, err := c.Next(2 * clientTimeout)
				if err != nil {
					errs[i] = fmt.Errorf("after %d messages: %w", n, err)
					return
				}
				if want := strconv.FormatUint(from+uint64(n), 10); f.Command != "MESSAGE" || f.Get(history.HeaderOffset) != want {
					errs[i] = fmt.Errorf("frame %d: %s at offset %q, want a MESSAGE at %s", n, f.Command, f.Get(history.HeaderOffset), want)
					return
				}
				if n == 0 && f.Get(history.HeaderRecovered) != "true" {
					errs[i] = fmt.Errorf("recovered %q %s, want true", f.Get(history.HeaderRecovered), f.Get(history.HeaderRecoveryReason))
					return
				}
			}
			took[i] = time.Since(t0)
		}()
	}
	close(start)
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("client %d: %v", i, err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d clients did not recover", failed, clients)
	}
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	s := scrape(t, base)
	t.Logf("%d sessions recovering %d messages each: p50 %v, p90 %v, p99 %v, max %v; history reads %v, shared %v, replayed %v",
		clients, missed, pct(0.50).Round(100*time.Microsecond), pct(0.90).Round(100*time.Microsecond),
		pct(0.99).Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond),
		s["stompgate_history_reads_total"], s["stompgate_history_reads_shared_total"], s["stompgate_history_replayed_messages_total"])
}
