package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/outcome"
)

// dialCountingPings dials url as a client that counts the pings it
// answers. coder/websocket answers a ping only while something reads the
// connection, as a browser always does.
func dialCountingPings(t *testing.T, url string) (*websocket.Conn, *atomic.Int64) {
	t.Helper()
	var pings atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{stomptest.Subprotocol},
		OnPingReceived: func(context.Context, []byte) bool {
			pings.Add(1)
			return true
		},
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws, &pings
}

// TestPingTimeout runs the attack for real: sessions that negotiated no
// heart-beat and then never read their socket. Each is pinged, answers
// nothing, and is ended as ping_timeout without a close handshake, while a
// client that reads (and so answers pings) stays connected.
func TestPingTimeout(t *testing.T) {
	ts := startServer(t, Config{PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond})

	ws, pings := dialCountingPings(t, ts.url)
	reader := stomptest.Connect(t, ws) // heart-beat 0,0; reads all the time

	const silent = 5
	var clients []*rawClient
	for range silent {
		c := dialRaw(t, ts.url)
		c.Connect() // heart-beat:0,0, then never reads again
		clients = append(clients, c)
	}
	poll.Until(t, 10*time.Second, func() error {
		if got := ts.obs.closedCount(outcome.ClosePingTimeout); got != silent {
			return fmt.Errorf("%d sessions closed as %s, want %d", got, outcome.ClosePingTimeout, silent)
		}
		return nil
	})
	if got := ts.Sessions(); got != 1 {
		t.Errorf("open sessions %d, want 1 (the client that reads)", got)
	}
	// The server dropped the connection without a close handshake: the
	// peer was not reading, and would never have answered one.
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, err := c.WS.Read(ctx)
		cancel()
		if err == nil || websocket.CloseStatus(err) != -1 {
			t.Errorf("silent client's read after the ping timeout: %v, want the connection dropped without a close frame", err)
		}
	}

	// The reading client answered several pings and is still served.
	poll.Until(t, 10*time.Second, func() error {
		if n := pings.Load(); n < 3 {
			return fmt.Errorf("the reading client answered %d pings, want 3 or more", n)
		}
		return nil
	})
	if err := reader.Send("/topic/alive", "text/plain", []byte("still here"), nil); err != nil {
		t.Fatalf("SEND after pings: %v", err)
	}
	if got := ts.obs.closedCount(outcome.ClosePingTimeout); got != silent {
		t.Errorf("sessions closed as %s: %d, want %d", outcome.ClosePingTimeout, got, silent)
	}
}

// TestPingOnlyWithoutHeartBeats checks that a session whose client
// heart-beats is left to the STOMP mechanism: it gets no pings while a
// session without heart-beats on the same server answers several, and
// when it falls silent it is ended as heartbeat_timeout.
func TestPingOnlyWithoutHeartBeats(t *testing.T) {
	ts := startServer(t, Config{
		PingInterval:       20 * time.Millisecond,
		PingTimeout:        time.Second,
		HeartBeatReceive:   100 * time.Millisecond,
		HeartBeatTolerance: 400 * time.Millisecond,
	})
	control, controlPings := dialCountingPings(t, ts.url)
	stomptest.Connect(t, control) // no heart-beats; reads all the time

	ws, pings := dialCountingPings(t, ts.url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte("CONNECT\naccept-version:1.2\nheart-beat:100,0\n\n\x00")); err != nil {
		t.Fatalf("CONNECT: %v", err)
	}
	if _, b, err := ws.Read(ctx); err != nil || !strings.HasPrefix(string(b), "CONNECTED\n") {
		t.Fatalf("waiting for CONNECTED: %q, %v", b, err)
	}
	// Read all the time from now on, as a browser does, so that a ping
	// would be answered and counted.
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = ws.CloseNow(); <-readerDone })

	// Heart-beat until the control session has answered five pings.
	beat := time.NewTicker(20 * time.Millisecond)
	defer beat.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for controlPings.Load() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the control session answered %d pings within 10s, want 5", controlPings.Load())
		}
		if err := ws.Write(ctx, websocket.MessageText, []byte("\n")); err != nil {
			t.Fatalf("heart-beat: %v", err)
		}
		<-beat.C
	}
	if n := pings.Load(); n != 0 {
		t.Errorf("a heart-beating session got %d pings, want 0", n)
	}
	if got := ts.obs.closedCount(outcome.CloseHeartBeat); got != 0 {
		t.Fatalf("the heart-beating session was closed while it beat")
	}

	// Silence: the heart-beat check ends the session.
	poll.Until(t, 10*time.Second, func() error {
		if ts.obs.closedCount(outcome.CloseHeartBeat) != 1 {
			return fmt.Errorf("no %s close recorded", outcome.CloseHeartBeat)
		}
		return nil
	})
	select {
	case <-readerDone:
	case <-time.After(10 * time.Second):
		t.Error("the client's connection is still open after the heart-beat timeout")
	}
	if got := ts.obs.closedCount(outcome.ClosePingTimeout); got != 0 {
		t.Errorf("sessions closed as %s: %d, want 0", outcome.ClosePingTimeout, got)
	}
}

// TestPingConfig checks the ping settings' defaults and bounds.
func TestPingConfig(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		in                     Config
		wantInterval, wantWait time.Duration
		wantErr                bool
	}{
		{"zero takes the defaults", Config{}, DefaultPingInterval, DefaultPingTimeout, false},
		{"set", Config{PingInterval: time.Second, PingTimeout: 2 * time.Second}, time.Second, 2 * time.Second, false},
		{"negative interval disables pings", Config{PingInterval: -1}, 0, DefaultPingTimeout, false},
		{"negative timeout is an error", Config{PingTimeout: -time.Second}, 0, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("withDefaults() error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got.PingInterval != tt.wantInterval || got.PingTimeout != tt.wantWait {
				t.Errorf("PingInterval, PingTimeout = %v, %v; want %v, %v", got.PingInterval, got.PingTimeout, tt.wantInterval, tt.wantWait)
			}
		})
	}
}

// TestHeartBeatOfferCapped runs the attack for real: a CONNECT offering
// heart-beats every 24.8 days (the largest a header allows), then
// silence. Without a bound the server would wait that long before
// checking; over Config.MaxHeartBeat the offer counts as none, so the
// session is pinged and, never answering, ends as ping_timeout. An offer
// under the bound is kept: that session is checked by its heart-beats.
func TestHeartBeatOfferCapped(t *testing.T) {
	ts := startServer(t, Config{PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond,
		HeartBeatReceive: time.Second, MaxHeartBeat: time.Minute})
	const silent = 3
	for range silent {
		c := dialRaw(t, ts.url)
		c.Send("CONNECT\naccept-version:1.2\nhost:test\nheart-beat:2147483647,0\n\n\x00")
		c.Expect("CONNECTED")
	}
	honest := dialRaw(t, ts.url)
	honest.Send("CONNECT\naccept-version:1.2\nhost:test\nheart-beat:60000,0\n\n\x00")
	honest.Expect("CONNECTED")
	poll.Until(t, 10*time.Second, func() error {
		if got := ts.obs.closedCount(outcome.ClosePingTimeout); got != silent {
			return fmt.Errorf("%d sessions closed as %s, want %d", got, outcome.ClosePingTimeout, silent)
		}
		return nil
	})
	ts.obs.mu.Lock()
	capped := ts.obs.hbCapped
	ts.obs.mu.Unlock()
	if capped != silent {
		t.Errorf("HeartBeatCapped reported %d times, want %d", capped, silent)
	}
	// The session under the bound negotiated 60 s: not pinged, still open.
	if got := ts.Sessions(); got != 1 {
		t.Errorf("open sessions %d, want 1 (the offer under the bound)", got)
	}
}

func TestCapHeartBeat(t *testing.T) {
	const bound = time.Minute
	for _, tt := range []struct {
		in, want time.Duration
	}{
		{0, 0},
		{10 * time.Second, 10 * time.Second},
		{bound, bound},
		{bound + time.Millisecond, 0},
		{2147483647 * time.Millisecond, 0},
	} {
		if got := capHeartBeat(tt.in, bound); got != tt.want {
			t.Errorf("capHeartBeat(%v, %v) = %v, want %v", tt.in, bound, got, tt.want)
		}
	}
}
