package main

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// TestSessionLimitEndToEnd is the product's acceptance check of the
// per-session limit, with the go-stomp client over WebSocket against the
// default limit (20 SEND per 1 s window):
//
//   - an abusive session sending 100 SEND/s for 5 s delivers at most
//     limit × (seconds + 1) = 120 messages to a subscriber, is not sent an
//     ERROR, and is still connected afterwards: a SEND with a receipt after
//     a pause gets its RECEIPT;
//   - a session sending at a real user's peak, 1.3/s, on another topic at
//     the same time delivers every message;
//   - /metrics accounts for every frame: received = passed + dropped, and
//     the abuser's excess is counted as dropped SEND for rate_limit.
func TestSessionLimitEndToEnd(t *testing.T) {
	const (
		limit      = 20
		duration   = 5 * time.Second
		abuseEvery = 10 * time.Millisecond                   // 100/s
		userEvery  = time.Second * 10 / 13                   // 1.3/s
		maxAbusive = limit * (int(duration/time.Second) + 1) // limit × (seconds + 1)
		abuseTopic = "/topic/game.abuse"
		userTopic  = "/topic/game.user"
		finalBody  = "final"
	)
	base, _ := startApp(t, "-send-limit", strconv.Itoa(limit), "-send-window", "1s")
	url := wsURL(base)

	abuseSub := subscribe(t, dialStomp(t, url), abuseTopic)
	userSub := subscribe(t, dialStomp(t, url), userTopic)
	abuser := dialStomp(t, url)
	user := dialStomp(t, url)

	// Both publishers run during the same duration, each paced by a
	// ticker. Frames of the abuser carry no receipt: the server answers
	// none for a dropped frame, and a client waiting for one would stop.
	var (
		wg                  sync.WaitGroup
		abuseSent, userSent int
		abuseErr, userErr   error
		start               = time.Now()
		deadline            = start.Add(duration)
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(abuseEvery)
		defer tick.Stop()
		for now := start; now.Before(deadline); now = <-tick.C {
			if abuseErr = abuser.Send(abuseTopic, "text/plain", []byte("abuse "+strconv.Itoa(abuseSent))); abuseErr != nil {
				return
			}
			abuseSent++
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(userEvery)
		defer tick.Stop()
		for now := start; now.Before(deadline); now = <-tick.C {
			// A real user's client may well ask for receipts; every one
			// comes back.
			if userErr = user.Send(userTopic, "text/plain", []byte("user "+strconv.Itoa(userSent)), stomp.SendOpt.Receipt); userErr != nil {
				return
			}
			userSent++
		}
	}()
	wg.Wait()
	if abuseErr != nil {
		t.Fatalf("abusive session: SEND %d: %v", abuseSent+1, abuseErr)
	}
	if userErr != nil {
		t.Fatalf("normal session: SEND %d: %v", userSent+1, userErr)
	}

	// After the window has passed, the abuser is still connected and
	// served: its next SEND passes and is acknowledged. An ERROR frame
	// earlier would have closed the connection and failed this SEND.
	time.Sleep(1100 * time.Millisecond)
	if err := abuser.Send(abuseTopic, "text/plain", []byte(finalBody), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND with receipt after the pause: %v; want a RECEIPT from a session still connected", err)
	}

	// The abuser's messages reach the subscriber in order, so when the
	// final one arrives, every earlier one that passed has arrived.
	abusive := 0
	for {
		m := nextMessage(t, abuseSub)
		if string(m.Body) == finalBody {
			break
		}
		abusive++
	}
	for i := 0; i < userSent; i++ {
		m := nextMessage(t, userSub)
		if want := "user " + strconv.Itoa(i); string(m.Body) != want {
			t.Fatalf("normal session's message %d: got %q, want %q", i, m.Body, want)
		}
	}
	t.Logf("abuser sent %d, %d delivered; normal session sent %d, all delivered", abuseSent, abusive, userSent)

	if abusive > maxAbusive {
		t.Errorf("abusive messages delivered: got %d, want at most %d", abusive, maxAbusive)
	}
	if abusive < limit {
		t.Errorf("abusive messages delivered: got %d, want at least one full window, %d", abusive, limit)
	}
	if abusive >= abuseSent {
		t.Errorf("abusive messages delivered: got %d of %d sent, want some dropped", abusive, abuseSent)
	}
	if userSent < 5 {
		t.Errorf("normal session sent %d messages in %v, want at least 5", userSent, duration)
	}

	m := scrape(t, base)
	received := m.sum("stompgate_frames_received_total")
	passed := m.sum("stompgate_frames_passed_total")
	dropped := m.sum("stompgate_frames_dropped_total")
	if received != passed+dropped {
		t.Errorf("frames: received %v, want passed %v + dropped %v = %v", received, passed, dropped, passed+dropped)
	}
	dropSend := m["stompgate_frames_dropped_total{command=\"SEND\",reason=\"rate_limit\"}"]
	if dropSend <= 0 {
		t.Errorf("dropped SEND frames for rate_limit: got %v, want > 0", dropSend)
	}
	// Exactly the abusive frames that did not reach the subscriber were
	// dropped, and nothing else.
	if want := float64(abuseSent - abusive); dropSend != want || dropped != want {
		t.Errorf("dropped frames: got %v SEND for rate_limit and %v in all, want %v (sent %d, delivered %d)",
			dropSend, dropped, want, abuseSent, abusive)
	}
	// SEND frames: the abuser's (and its final one), the normal
	// session's, and one sync per subscriber.
	if got, want := m["stompgate_frames_received_total{command=\"SEND\"}"], float64(abuseSent+1+userSent+2); got != want {
		t.Errorf("received SEND frames: got %v, want %v", got, want)
	}
	if got := m.sum("stompgate_sessions_closed_total"); got != 0 {
		t.Errorf("sessions closed during the run: got %v, want 0", got)
	}
	if got := m.sum("stompgate_protocol_error_closes_total"); got != 0 {
		t.Errorf("protocol error closes: got %v, want 0", got)
	}
}

// TestDroppedFramesGetNoReceipt checks the silent drop at the frame
// level, with a hand-written client that asks for a receipt on every
// SEND: within one window exactly limit RECEIPTs come back, in order, and
// no ERROR; after the window the session is served again.
func TestDroppedFramesGetNoReceipt(t *testing.T) {
	const limit, sent = 5, 12
	base, _ := startApp(t, "-send-limit", strconv.Itoa(limit), "-send-window", "1s")
	ws, resp, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, describe(resp))
	}
	c := stomptest.NewRaw(t, ws)
	c.Send("CONNECT\naccept-version:1.2\nhost:e2e\nheart-beat:0,0\n\n\x00")
	if f := c.Read(); f.Command != "CONNECTED" {
		t.Fatalf("got %s %v, want CONNECTED", f.Command, f.Headers)
	}

	// All SEND frames in one WebSocket message: they reach the limiter
	// within the same window.
	var burst []byte
	for i := range sent {
		burst = fmt.Appendf(burst, "SEND\ndestination:/topic/e2e.receipts\nreceipt:r%d\n\nbody\x00", i)
	}
	c.Send(string(burst))

	// After the window has passed, a SEND is acknowledged again; its
	// RECEIPT comes after those of the burst, if any.
	time.Sleep(1100 * time.Millisecond)
	c.Send("SEND\ndestination:/topic/e2e.receipts\nreceipt:after-window\n\nbody\x00")
	var got []string
	for {
		f := c.Read()
		if f.Command != "RECEIPT" {
			t.Fatalf("got %s %v, want only RECEIPT frames", f.Command, f.Headers)
		}
		id := f.Get("receipt-id")
		if id == "after-window" {
			break
		}
		got = append(got, id)
	}
	if fmt.Sprint(got) != "[r0 r1 r2 r3 r4]" {
		t.Errorf("receipts before the window passed: got %v, want [r0 r1 r2 r3 r4]", got)
	}
}

// frameClient speaks STOMP by hand over a WebSocket.
type frameClient = stomptest.Raw
