package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, stomptest.IgnoreUnsubscribeWaiter)
}

// TestGoStompClient drives the server with go-stomp's own client over a
// WebSocket stream: connect, subscribe, send with a receipt, receive with
// every header carried, disconnect.
func TestGoStompClient(t *testing.T) {
	ts := startServer(t, Config{})
	sub := stomptest.Dial(t, ts.url)
	pub := stomptest.Dial(t, ts.url)
	if v := sub.Version(); v != stomp.V12 {
		t.Fatalf("negotiated version %v, want 1.2", v)
	}
	if !strings.HasPrefix(sub.Server(), "stompgate") {
		t.Errorf("server header %q, want stompgate", sub.Server())
	}

	s, err := sub.Subscribe("/topic/room.1", stomp.AckAuto)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	// Frames of one session are handled in order: a receipt for a later
	// frame proves the SUBSCRIBE is in place.
	if err := sub.Send("/topic/sync", "", nil, stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("sync: %v", err)
	}
	body := []byte("hello\x00world") // content-length carries a NUL
	err = pub.Send("/topic/room.1", "text/plain", body,
		stomp.SendOpt.Receipt,
		stomp.SendOpt.Header("x-player", "alice:1"))
	if err != nil {
		t.Fatalf("Send with receipt: %v", err)
	}
	select {
	case m := <-s.C:
		if m.Err != nil {
			t.Fatalf("message error: %v", m.Err)
		}
		if !bytes.Equal(m.Body, body) {
			t.Errorf("body %q, want %q", m.Body, body)
		}
		if m.Destination != "/topic/room.1" {
			t.Errorf("destination %q", m.Destination)
		}
		if m.ContentType != "text/plain" {
			t.Errorf("content-type %q", m.ContentType)
		}
		if got := m.Header.Get("x-player"); got != "alice:1" {
			t.Errorf("x-player %q, want alice:1 (escaped colon round trip)", got)
		}
		if m.Header.Get(frame.MessageId) == "" {
			t.Errorf("no message-id")
		}
		if m.Header.Get(frame.Subscription) != s.Id() {
			t.Errorf("subscription %q, want %q", m.Header.Get(frame.Subscription), s.Id())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no MESSAGE")
	}
	stomptest.Unsubscribe(t, s)
}

func TestMessageIDsUnique(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:0\ndestination:/topic/a\n\n\x00SUBSCRIBE\nid:1\ndestination:/topic/a\nack:client-individual\n\n\x00")
	for i := 0; i < 3; i++ {
		c.Send("SEND\ndestination:/topic/a\n\nx\x00")
	}
	seen := map[string]bool{}
	for i := 0; i < 6; i++ {
		f := c.Expect("MESSAGE")
		id := f.Get("message-id")
		key := f.Get("subscription") + "/" + id
		if seen[key] {
			t.Fatalf("message-id %q delivered twice on subscription %q", id, f.Get("subscription"))
		}
		seen[key] = true
		if f.Get("subscription") == "1" && f.Get("ack") == "" {
			t.Errorf("client-individual MESSAGE without ack header")
		}
	}
	// ACK of a delivered message is accepted (with a receipt to observe it).
	c.Send("ACK\nid:x\nreceipt:r1\n\n\x00")
	if r := c.Expect("RECEIPT"); r.Get("receipt-id") != "r1" {
		t.Errorf("receipt-id %q", r.Get("receipt-id"))
	}
}

// TestProtocolErrors sends each malformed input on its own session: each
// gets an ERROR frame with a message header and then a close, and the
// server keeps serving a session opened beforehand.
func TestProtocolErrors(t *testing.T) {
	ts := startServer(t, Config{Limits: stompframe.Limits{MaxFrameSize: 4096}})
	bystander := dialRaw(t, ts.url)
	bystander.Connect()
	bystander.Send("SUBSCRIBE\nid:0\ndestination:/topic/ok\n\n\x00")

	connect := "CONNECT\naccept-version:1.2\nhost:x\n\n\x00"
	tests := []struct {
		name    string
		connect bool
		send    string
		message string
	}{
		{"frame before CONNECT", false, "SEND\ndestination:/topic/a\n\nx\x00", "not connected"},
		{"unknown command", true, "FOO\n\n\x00", "unknown command"},
		{"SEND without destination", true, "SEND\n\nx\x00", "missing header"},
		{"SUBSCRIBE without id", true, "SUBSCRIBE\ndestination:/topic/a\n\n\x00", "missing header"},
		{"SUBSCRIBE without destination", true, "SUBSCRIBE\nid:1\n\n\x00", "missing header"},
		{"UNSUBSCRIBE without id", true, "UNSUBSCRIBE\n\n\x00", "missing header"},
		{"ACK without id", true, "ACK\n\n\x00", "missing header"},
		{"bad escape", true, "SEND\ndestination:/topic/a\nx:a\\tb\n\nx\x00", ""},
		{"oversize body", true, "SEND\ndestination:/topic/a\ncontent-length:1000000000\n\nx\x00", ""},
		{"oversize message", true, "SEND\ndestination:/topic/a\n\n" + strings.Repeat("x", 5000) + "\x00", ""},
		{"unsupported version", false, "CONNECT\naccept-version:2.0\nhost:x\n\n\x00", "unsupported protocol version"},
		{"second CONNECT", true, connect, "already connected"},
		{"bad heart-beat", false, "CONNECT\naccept-version:1.2\nheart-beat:x\n\n\x00", "invalid heart-beat"},
		{"unknown transaction", true, "COMMIT\ntransaction:t9\n\n\x00", "unknown transaction"},
		{"bad ack mode", true, "SUBSCRIBE\nid:1\ndestination:/a\nack:maybe\n\n\x00", "invalid ack mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, ts.url)
			if tt.connect {
				c.Connect()
			}
			c.Send(tt.send)
			f := c.Expect("ERROR")
			msg, ok := f.Lookup("message")
			if !ok || msg == "" {
				t.Errorf("ERROR without message header: %v", f.Headers)
			}
			if tt.message != "" && msg != tt.message {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
			if code := c.ExpectClosed(); code == websocket.StatusNormalClosure {
				t.Errorf("close status %v, want an error status", code)
			}
		})
	}

	// Each close is counted under its bounded kind.
	poll.Until(t, 5*time.Second, func() error {
		ts.obs.mu.Lock()
		defer ts.obs.mu.Unlock()
		want := map[string]int{
			"not_connected": 1, "unknown_command": 1, "missing_header": 5,
			"bad_escape": 1, "frame_too_large": 2, "unsupported_version": 1, "malformed": 4,
		}
		for k, n := range want {
			if ts.obs.protocol[k] != n {
				return fmt.Errorf("protocol error closes %v, want %v", ts.obs.protocol, want)
			}
		}
		return nil
	})

	// The bystander was never disturbed.
	bystander.Send("SEND\ndestination:/topic/ok\n\nstill here\x00")
	if f := bystander.Expect("MESSAGE"); string(f.Body) != "still here" {
		t.Errorf("body %q", f.Body)
	}
}

func TestReceiptsAndDisconnect(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	c.Connect()
	for i, fr := range []string{
		"SUBSCRIBE\nid:0\ndestination:/topic/a\nreceipt:%d\n\n\x00",
		"SEND\ndestination:/topic/b\nreceipt:%d\n\nx\x00",
		"BEGIN\ntransaction:t\nreceipt:%d\n\n\x00",
		"ABORT\ntransaction:t\nreceipt:%d\n\n\x00",
		"UNSUBSCRIBE\nid:0\nreceipt:%d\n\n\x00",
	} {
		c.Send(fmt.Sprintf(fr, i))
		if r := c.Expect("RECEIPT"); r.Get("receipt-id") != fmt.Sprint(i) {
			t.Errorf("frame %d: receipt-id %q", i, r.Get("receipt-id"))
		}
	}
	c.Send("DISCONNECT\nreceipt:bye\n\n\x00")
	if r := c.Expect("RECEIPT"); r.Get("receipt-id") != "bye" {
		t.Errorf("DISCONNECT receipt-id %q", r.Get("receipt-id"))
	}
	if code := c.ExpectClosed(); code != websocket.StatusNormalClosure {
		t.Errorf("close status %v after DISCONNECT, want 1000", code)
	}
	poll.Until(t, 5*time.Second, func() error {
		if n := ts.obs.closedCount(outcome.CloseNormal); n != 1 {
			return fmt.Errorf("%d normal closes recorded", n)
		}
		return nil
	})
}

func TestTransactionDeliversOnCommit(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:0\ndestination:/topic/t\n\n\x00")
	c.Send("BEGIN\ntransaction:tx1\n\n\x00SEND\ndestination:/topic/t\ntransaction:tx1\n\none\x00SEND\ndestination:/topic/t\n\nnow\x00")
	if f := c.Expect("MESSAGE"); string(f.Body) != "now" {
		t.Fatalf("first delivery %q, want the non-transactional SEND", f.Body)
	}
	c.Send("COMMIT\ntransaction:tx1\n\n\x00")
	if f := c.Expect("MESSAGE"); string(f.Body) != "one" {
		t.Fatalf("after COMMIT got %q, want one", f.Body)
	}
}

func TestVersionNegotiation(t *testing.T) {
	ts := startServer(t, Config{})
	tests := []struct {
		name    string
		protos  []string
		connect string
		want    string
	}{
		{"1.2 offered", []string{"v12.stomp"}, "CONNECT\naccept-version:1.0,1.1,1.2\n\n\x00", "1.2"},
		{"no subprotocol", nil, "CONNECT\naccept-version:1.1,1.2\n\n\x00", "1.2"},
		{"1.0 without header", nil, "CONNECT\n\n\x00", "1.0"},
		{"STOMP command", nil, "STOMP\naccept-version:1.1\nhost:h\n\n\x00", "1.1"},
		{"subprotocol caps", []string{"v10.stomp"}, "CONNECT\naccept-version:1.0,1.1,1.2\n\n\x00", "1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, ts.url, tt.protos...)
			c.Send(tt.connect)
			f := c.Expect("CONNECTED")
			if v := f.Get("version"); v != tt.want {
				t.Errorf("version %q, want %q", v, tt.want)
			}
			if f.Get("session") == "" || f.Get("heart-beat") == "" {
				t.Errorf("CONNECTED headers %v", f.Headers)
			}
		})
	}
}

func TestHeartBeats(t *testing.T) {
	ts := startServer(t, Config{
		HeartBeatSend:      50 * time.Millisecond,
		HeartBeatReceive:   50 * time.Millisecond,
		HeartBeatTolerance: 50 * time.Millisecond,
	})

	t.Run("server sends EOL when idle", func(t *testing.T) {
		c := dialRaw(t, ts.url)
		c.Send("CONNECT\naccept-version:1.2\nheart-beat:0,50\n\n\x00")
		if f := c.Expect("CONNECTED"); f.Get("heart-beat") != "50,50" {
			t.Errorf("heart-beat %q", f.Get("heart-beat"))
		}
		poll.Until(t, 5*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, b, err := c.WS.Read(ctx)
			if err != nil {
				return err
			}
			c.Dec.Feed(b)
			if _, err := c.Dec.Next(); err != nil {
				return err
			}
			if c.Dec.HeartBeats() == 0 {
				return fmt.Errorf("no heart-beat yet")
			}
			return nil
		})
	})

	t.Run("silent client is closed", func(t *testing.T) {
		c := dialRaw(t, ts.url)
		c.Send("CONNECT\naccept-version:1.2\nheart-beat:50,0\n\n\x00")
		c.Expect("CONNECTED")
		c.ExpectClosed()
		poll.Until(t, 5*time.Second, func() error {
			if ts.obs.closedCount(outcome.CloseHeartBeat) == 0 {
				return fmt.Errorf("no heartbeat_timeout close recorded")
			}
			return nil
		})
	})

	t.Run("client heart-beats keep it open", func(t *testing.T) {
		c := dialRaw(t, ts.url)
		c.Send("CONNECT\naccept-version:1.2\nheart-beat:50,0\n\n\x00")
		c.Expect("CONNECTED")
		for i := 0; i < 10; i++ {
			time.Sleep(25 * time.Millisecond)
			c.Send("\n")
		}
		c.Send("SUBSCRIBE\nid:0\ndestination:/x\nreceipt:alive\n\n\x00")
		c.Expect("RECEIPT")
	})
}

func TestConnectTimeout(t *testing.T) {
	ts := startServer(t, Config{ConnectTimeout: 50 * time.Millisecond})
	c := dialRaw(t, ts.url)
	f := c.Expect("ERROR")
	if f.Get("message") != "CONNECT timeout" {
		t.Errorf("message %q", f.Get("message"))
	}
	c.ExpectClosed()
}

func TestSubscriptionCap(t *testing.T) {
	ts := startServer(t, Config{MaxSubscriptions: 2})
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:0\ndestination:/a\n\n\x00SUBSCRIBE\nid:1\ndestination:/b\n\n\x00SUBSCRIBE\nid:2\ndestination:/c\n\n\x00")
	if f := c.Expect("ERROR"); f.Get("message") != "too many subscriptions" {
		t.Errorf("message %q", f.Get("message"))
	}
}

// TestSlowConsumer fills a non-reading subscriber's queue: it is closed,
// and the publisher and another subscriber carry on.
func TestSlowConsumer(t *testing.T) {
	ts := startServer(t, Config{OutboundQueue: 8, WriteTimeout: 200 * time.Millisecond})
	slow := dialRaw(t, ts.url)
	slow.Connect()
	slow.Send("SUBSCRIBE\nid:0\ndestination:/topic/big\nreceipt:s\n\n\x00")
	slow.Expect("RECEIPT")

	pub := stomptest.Dial(t, ts.url)
	body := bytes.Repeat([]byte("x"), 60<<10)
	poll.Until(t, 30*time.Second, func() error {
		for i := 0; i < 20; i++ {
			if err := pub.Send("/topic/big", "", body); err != nil {
				return err
			}
		}
		ts.obs.mu.Lock()
		defer ts.obs.mu.Unlock()
		if ts.obs.slow == 0 {
			return fmt.Errorf("no slow consumer yet")
		}
		return nil
	})
	// The publisher's session is unaffected.
	if err := pub.Send("/topic/other", "", []byte("ok"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("publisher after slow consumer: %v", err)
	}
}

// TestShutdown checks that Shutdown sends each session an ERROR and closes
// it with 1001, refuses new sessions, and leaves no goroutine behind.
func TestShutdown(t *testing.T) {
	ts := startServer(t, Config{})
	clients := make([]*rawClient, 3)
	for i := range clients {
		clients[i] = dialRaw(t, ts.url)
		clients[i].Connect()
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	for _, c := range clients {
		f := c.Expect("ERROR")
		if f.Get("message") != "server shutting down" {
			t.Errorf("message %q", f.Get("message"))
		}
		if code := c.ExpectClosed(); code != websocket.StatusGoingAway {
			t.Errorf("close %v, want 1001", code)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := ts.Sessions(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
	if ts.Ready() {
		t.Errorf("Ready after Shutdown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := websocket.Dial(ctx, ts.url, nil); err == nil {
		t.Errorf("dial after Shutdown succeeded")
	}
}
