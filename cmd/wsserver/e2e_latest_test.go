package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
)

// gameRules gives /topic/game.state latest-value delivery under the rule
// game_state, caps /topic/lobby at max subscribers (0: none) under
// lobby, and leaves every other destination as it is: destination rules
// in the policy file, beside the test policy's zones.
func gameRules(t *testing.T, max int) appOptions {
	t.Helper()
	rules := testPolicy + `
destinations:
  - name: game_state
    pattern: /topic/game.state
    delivery: latest
  - name: lobby
    pattern: /topic/lobby
`
	if max > 0 {
		rules += "    max_subscribers: " + strconv.Itoa(max) + "\n"
	}
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	return appOptions{listen: true, env: map[string]string{"WSSERVER_POLICY": path}}
}

// slowRead is what a subscriber reading one message per tick saw.
type slowRead struct {
	got   int   // messages read
	seqs  []int // their sequence numbers, in order
	after int   // messages read once the publisher had sent its last
	err   error // what ended the subscription early, if anything
}

// readSlowly reads sub one message per tick until it reads sequence
// number last or the subscription ends; published is the publisher's
// count so far, which reaches last+1 when it is done.
func readSlowly(sub *stomp.Subscription, tick time.Duration, last int, published *atomic.Int64) slowRead {
	var r slowRead
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for range tk.C {
		var msg *stomp.Message
		select {
		case msg = <-sub.C:
		case <-time.After(clientTimeout):
			r.err = fmt.Errorf("no message within %v", clientTimeout)
			return r
		}
		if msg == nil || msg.Err != nil {
			if msg != nil {
				r.err = msg.Err
			} else {
				r.err = fmt.Errorf("subscription ended")
			}
			return r
		}
		seq, err := strconv.Atoi(string(bytes.TrimRight(msg.Body[:8], " ")))
		if err != nil {
			r.err = fmt.Errorf("body %.20q: %v", msg.Body, err)
			return r
		}
		r.got++
		r.seqs = append(r.seqs, seq)
		if published.Load() > int64(last) {
			r.after++
		}
		if seq == last {
			return r
		}
	}
	return r
}

// statesRate is how many states a second the slow-reader tests publish;
// their readers read statesRead a second.
const (
	statesRate = 60
	statesRead = 5
)

// statesRun is a go-stomp subscriber of a destination and a go-stomp
// publisher of states to it, possibly on another instance.
type statesRun struct {
	dest string
	sub  *stomp.Subscription
	pub  *stomp.Conn
}

// newStatesRun connects the subscriber on subURL, subscribes it to dest
// and connects the publisher on pubURL.
func newStatesRun(t *testing.T, pubURL, subURL, dest string) *statesRun {
	t.Helper()
	// go-stomp holds up to 16 messages per subscription and the read
	// channel's capacity; a capacity of 1 keeps what the client library
	// holds, not the server, the bulk of what is stale.
	c := dialStomp(t, subURL, stomp.ConnOpt.ReadChannelCapacity(1))
	return &statesRun{dest: dest, sub: subscribe(t, c, dest), pub: dialStomp(t, pubURL)}
}

// run publishes messages states of 16 KiB (each starting with its
// sequence number) at statesRate and reads them at statesRead until it
// reads the last or the subscription ends. It may run on a goroutine of
// its own: it fails the test with Errorf only.
func (r *statesRun) run(t *testing.T, messages int) slowRead {
	const size = 16 << 10
	var published atomic.Int64
	var read slowRead
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		read = readSlowly(r.sub, time.Second/statesRead, messages-1, &published)
	}()
	go func() {
		defer wg.Done()
		tk := time.NewTicker(time.Second / statesRate)
		defer tk.Stop()
		for i := range messages {
			<-tk.C
			// go-stomp writes the body after Send returns.
			body := bytes.Repeat([]byte("s"), size)
			copy(body, fmt.Sprintf("%-8d", i))
			if err := r.pub.Send(r.dest, "text/plain", body); err != nil {
				t.Errorf("SEND %d to %s: %v", i, r.dest, err)
				return
			}
			published.Add(1)
		}
	}()
	wg.Wait()
	return read
}

// checkRecent checks what a reader of a latest-value destination saw:
// it stayed connected, read states in order, skipping some, ending with
// the last published, and once the publisher was done had only what the
// sockets and the client library hold left to read (go-stomp keeps 16
// messages per subscription), never a backlog in the server, where an
// ordinary destination's MESSAGEs wait up to -outbound-queue of them.
func checkRecent(t *testing.T, r slowRead, messages int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("latest-value subscriber: %v after %d messages, want it connected to the end", r.err, r.got)
	}
	if n := len(r.seqs); n == 0 || r.seqs[n-1] != messages-1 {
		t.Fatalf("latest-value subscriber's last message %v, want %d, the last published", r.seqs[max(n-1, 0):], messages-1)
	}
	skipped := false
	for i := 1; i < len(r.seqs); i++ {
		if r.seqs[i] <= r.seqs[i-1] {
			t.Fatalf("latest-value subscriber read %d after %d, want increasing states", r.seqs[i], r.seqs[i-1])
		}
		skipped = skipped || r.seqs[i] > r.seqs[i-1]+1
	}
	if !skipped || r.after > 40 {
		t.Errorf("latest-value subscriber read %d of %d (skipping some: %v), %d once the publisher was done; want only recent states",
			r.got, messages, skipped, r.after)
	}
}

// TestLatestValueSlowReader is the game on a phone on a slow network:
// states published at 60 per second, read at 5 per second. On a
// latest-value destination the reader stays connected, gets only recent
// states, in order, and ends with the last one published; on an
// ordinary destination at the same rate the same reader is closed as a
// slow consumer. Both run at once against one server, with go-stomp
// clients on both sides.
func TestLatestValueSlowReader(t *testing.T) {
	const messages = 4 * statesRate
	base, _ := startAppWith(t, gameRules(t, 0),
		"-send-limit", "100", "-outbound-queue", "64", "-socket-send-buffer", "4096")
	url := wsURL(base)

	latestRun := newStatesRun(t, url, url, "/topic/game.state")
	normalRun := newStatesRun(t, url, url, "/topic/game.log")
	var latest, normal slowRead
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); latest = latestRun.run(t, messages) }()
	go func() { defer wg.Done(); normal = normalRun.run(t, messages) }()
	wg.Wait()

	t.Logf("latest-value: read %d of %d, %d of them once the publisher was done; ordinary: read %d, ended by %v",
		latest.got, messages, latest.after, normal.got, normal.err)
	checkRecent(t, latest, messages)
	if normal.err == nil {
		t.Errorf("ordinary subscriber read all %d messages at 5/s, want it closed as a slow consumer", normal.got)
	}

	s := scrape(t, base)
	if got := s.sum("stompgate_sessions_closed_total", `reason="slow_consumer"`); got != 1 {
		t.Errorf(`sessions_closed_total{reason="slow_consumer"} = %v, want 1 (the ordinary subscriber)`, got)
	}
	if got := s.sum("stompgate_latest_replaced_total", `rule="game_state"`); got < float64(messages/2) {
		t.Errorf(`latest_replaced_total{rule="game_state"} = %v, want most of the %d states`, got, messages)
	}
}

// TestLatestValueAcrossInstances is the slow reader on instance b of
// states published on instance a: they reach b through Redis and b's
// broker, and are replaced there like local ones.
func TestLatestValueAcrossInstances(t *testing.T) {
	const messages = 3 * statesRate
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	var c cluster
	for range 2 {
		base, a := startAppWith(t, gameRules(t, 0), "-redis-url", rs.URL(), "-relay", "redis",
			"-send-limit", "100", "-socket-send-buffer", "4096")
		c.bases, c.apps = append(c.bases, base), append(c.apps, a)
	}
	const dest = "/topic/game.state"
	run := newStatesRun(t, wsURL(c.bases[0]), wsURL(c.bases[1]), dest)
	c.waitRelaySubscribed(t, rdb, dest, false)
	r := run.run(t, messages)
	t.Logf("read %d of %d, %d of them once the publisher was done", r.got, messages, r.after)
	checkRecent(t, r, messages)
	if got := scrape(t, c.bases[1]).sum("stompgate_latest_replaced_total", `rule="game_state"`); got < float64(messages/2) {
		t.Errorf(`instance b: latest_replaced_total{rule="game_state"} = %v, want most of the %d states`, got, messages)
	}
}

// TestSubscriberCapE2E fills /topic/lobby, capped at 2, with go-stomp
// clients: the third SUBSCRIBE gets ERROR "subscriber limit reached"
// with its receipt id and the close, counted by rule; an UNSUBSCRIBE
// frees the place.
func TestSubscriberCapE2E(t *testing.T) {
	base, _ := startAppWith(t, gameRules(t, 2))
	url := wsURL(base)
	a := dialStomp(t, url)
	subA := subscribe(t, a, "/topic/lobby")
	b := dialStomp(t, url)
	subscribe(t, b, "/topic/lobby")

	refused := func() {
		t.Helper()
		ws, _, err := dialWS(t, url)
		if err != nil {
			t.Fatal(err)
		}
		c := stomptest.NewRaw(t, ws)
		c.Connect()
		c.Send("SUBSCRIBE\nid:0\ndestination:/topic/lobby\nreceipt:join-1\n\n\x00")
		f := c.Expect("ERROR")
		if got, want := f.Get("message"), "subscriber limit reached"; got != want {
			t.Errorf("ERROR message %q, want %q", got, want)
		}
		if got := f.Get("receipt-id"); got != "join-1" {
			t.Errorf("ERROR receipt-id %q, want join-1", got)
		}
		if body := string(f.Body); !strings.Contains(body, "/topic/lobby") {
			t.Errorf("ERROR body %q does not name the destination", body)
		}
		c.ExpectClosed()
	}
	refused()
	if err := subA.Unsubscribe(); err != nil {
		t.Fatalf("UNSUBSCRIBE: %v", err)
	}
	// The RECEIPT of a SUBSCRIBE on a's session says the UNSUBSCRIBE
	// before it was handled.
	subscribe(t, a, "/topic/elsewhere")
	c := dialStomp(t, url)
	subscribe(t, c, "/topic/lobby")
	refused()

	s := scrape(t, base)
	if got := s.sum("stompgate_subscriber_cap_refusals_total", `rule="lobby"`); got != 2 {
		t.Errorf(`subscriber_cap_refusals_total{rule="lobby"} = %v, want 2`, got)
	}
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base).sum("stompgate_sessions_closed_total", `reason="subscriber_cap"`); got != 2 {
			return fmt.Errorf(`sessions_closed_total{reason="subscriber_cap"} = %v, want 2`, got)
		}
		return nil
	})
}

// TestSubscriberCapAcrossInstances caps /topic/lobby at 2 on two
// instances sharing a Redis: one subscriber on each fills the cap, a
// third is refused on either, and an UNSUBSCRIBE on one instance frees a
// place the other can take.
func TestSubscriberCapAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	var bases []string
	for range 2 {
		base, _ := startAppWith(t, gameRules(t, 2), "-redis-url", rs.URL())
		bases = append(bases, base)
	}
	refused := func(base string) {
		t.Helper()
		ws, _, err := dialWS(t, wsURL(base))
		if err != nil {
			t.Fatal(err)
		}
		c := stomptest.NewRaw(t, ws)
		c.Connect()
		c.Send("SUBSCRIBE\nid:0\ndestination:/topic/lobby\nreceipt:join\n\n\x00")
		if f := c.Expect("ERROR"); f.Get("message") != "subscriber limit reached" || f.Get("receipt-id") != "join" {
			t.Errorf("ERROR %v, want subscriber limit reached for receipt join", f.Headers)
		}
		c.ExpectClosed()
	}
	a := dialStomp(t, wsURL(bases[0]))
	subA := subscribe(t, a, "/topic/lobby")
	subscribe(t, dialStomp(t, wsURL(bases[1])), "/topic/lobby")
	refused(bases[0])
	refused(bases[1])

	if err := subA.Unsubscribe(); err != nil {
		t.Fatalf("UNSUBSCRIBE: %v", err)
	}
	subscribe(t, a, "/topic/elsewhere") // its RECEIPT follows the UNSUBSCRIBE
	subscribe(t, dialStomp(t, wsURL(bases[1])), "/topic/lobby")
	refused(bases[0])

	for i, base := range bases {
		if got := scrape(t, base).sum("stompgate_subscriber_cap_refusals_total", `rule="lobby"`); got < 1 {
			t.Errorf(`instance %d: subscriber_cap_refusals_total{rule="lobby"} = %v, want at least 1`, i, got)
		}
	}
}
