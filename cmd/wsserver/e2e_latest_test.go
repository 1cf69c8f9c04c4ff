package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/server"
)

// gameRules gives /topic/game.state latest-value delivery under the rule
// game_state, caps /topic/lobby at max subscribers under lobby, and
// leaves every other destination as it is.
func gameRules(max int) appOptions {
	return appOptions{listen: true, edit: func(st *settings) {
		st.destinationRules = []string{"game_state", "lobby"}
		st.destinationOptions = func(dest string) server.DestinationOptions {
			switch dest {
			case "/topic/game.state":
				return server.DestinationOptions{Rule: "game_state", Latest: true}
			case "/topic/lobby":
				return server.DestinationOptions{Rule: "lobby", MaxSubscribers: max}
			}
			return server.DestinationOptions{}
		}
	}}
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

// TestLatestValueSlowReader is the game on a phone on a slow network:
// states published at 60 per second, read at 5 per second. On a
// latest-value destination the reader stays connected, gets only recent
// states, in order, and ends with the last one published; on an
// ordinary destination at the same rate the same reader is closed as a
// slow consumer. Both run at once against one server with go-stomp
// clients; the publishers are go-stomp clients too.
func TestLatestValueSlowReader(t *testing.T) {
	const (
		rate     = 60
		messages = 4 * rate // four seconds of states
		size     = 16 << 10
	)
	base, _ := startAppWith(t, gameRules(0),
		"-send-limit", "100", "-outbound-queue", "64", "-socket-send-buffer", "4096")
	url := wsURL(base)

	type run struct {
		dest      string
		published atomic.Int64
		read      slowRead
	}
	runs := []*run{{dest: "/topic/game.state"}, {dest: "/topic/game.log"}}
	var wg sync.WaitGroup
	for _, r := range runs {
		// go-stomp holds up to 16 messages per subscription and the read
		// channel's capacity; a capacity of 1 keeps what the client
		// library holds, not the server, the bulk of what is stale.
		c := dialStomp(t, url, stomp.ConnOpt.ReadChannelCapacity(1))
		sub := subscribe(t, c, r.dest)
		pub := dialStomp(t, url)
		wg.Add(2)
		go func() {
			defer wg.Done()
			r.read = readSlowly(sub, time.Second/5, messages-1, &r.published)
		}()
		go func() {
			defer wg.Done()
			defer disconnect(t, pub)
			tk := time.NewTicker(time.Second / rate)
			defer tk.Stop()
			for i := range messages {
				<-tk.C
				// go-stomp writes the body after Send returns.
				body := bytes.Repeat([]byte("s"), size)
				copy(body, fmt.Sprintf("%-8d", i))
				if err := pub.Send(r.dest, "text/plain", body); err != nil {
					t.Errorf("SEND %d to %s: %v", i, r.dest, err)
					return
				}
				r.published.Add(1)
			}
		}()
	}
	wg.Wait()

	latest, normal := runs[0].read, runs[1].read
	t.Logf("latest-value: read %d of %d, %d of them once the publisher was done; ordinary: read %d, ended by %v",
		latest.got, messages, latest.after, normal.got, normal.err)
	if latest.err != nil {
		t.Fatalf("latest-value subscriber: %v after %d messages, want it connected to the end", latest.err, latest.got)
	}
	if n := len(latest.seqs); n == 0 || latest.seqs[n-1] != messages-1 {
		t.Fatalf("latest-value subscriber's last message %v, want %d, the last published", latest.seqs[max(n-1, 0):], messages-1)
	}
	skipped := false
	for i := 1; i < len(latest.seqs); i++ {
		if latest.seqs[i] <= latest.seqs[i-1] {
			t.Fatalf("latest-value subscriber read %d after %d, want increasing states", latest.seqs[i], latest.seqs[i-1])
		}
		skipped = skipped || latest.seqs[i] > latest.seqs[i-1]+1
	}
	// Once the publisher is done, what is left to read is what the
	// sockets and the client library hold (go-stomp keeps 16 messages per
	// subscription), never a backlog in the server: an ordinary queue
	// of 64 frames would take its reader more than 12 s.
	if !skipped || latest.got > messages/3 || latest.after > 40 {
		t.Errorf("latest-value subscriber read %d of %d (skipping some: %v), %d once the publisher was done; want only recent states",
			latest.got, messages, skipped, latest.after)
	}
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

// TestSubscriberCapE2E fills /topic/lobby, capped at 2, with go-stomp
// clients: the third SUBSCRIBE gets ERROR "subscriber limit reached"
// with its receipt id and the close, counted by rule; an UNSUBSCRIBE
// frees the place.
func TestSubscriberCapE2E(t *testing.T) {
	base, _ := startAppWith(t, gameRules(2))
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
