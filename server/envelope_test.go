package server

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
)

// session returns the open session id, or fails the test.
func (ts *testServer) session(t *testing.T, id string) *session {
	t.Helper()
	s, ok := ts.reg.get(id)
	if !ok {
		t.Fatalf("session %s is not open", id)
	}
	return s
}

// held returns what the session with the given id holds in its outbound
// queue, frames and bytes, including what its writer has in flight.
func (ts *testServer) held(t *testing.T, id string) (frames, bytes int) {
	t.Helper()
	frames, bytes, _ = ts.session(t, id).box.held()
	return frames, bytes
}

// TestReceiptFloodBackpressure runs the receipt attack: one session packs
// thousands of receipt-requesting frames into each WebSocket message and
// never reads. The server must stop reading it (the client's writes
// block) while holding no more than its outbound bounds, and other
// sessions must not notice.
func TestReceiptFloodBackpressure(t *testing.T) {
	const queue, queueBytes = 256, 64 << 10
	// The inbound budget would hold this client back before its
	// replies do.
	ts := startServer(t, Config{OutboundQueue: queue, OutboundBytes: queueBytes, ControlLimit: 1 << 30, WriteTimeout: time.Minute,
		InboundFrames: 1 << 30, InboundBytes: 1 << 30})
	c := dialRaw(t, ts.url)
	id := c.Connect().Get("session")

	msg := []byte(strings.Repeat("UNSUBSCRIBE\nid:nope\nreceipt:r\n\n\x00", (60<<10)/30))
	blocked := false
	for i := 0; i < 2000 && !blocked; i++ {
		// A write waits this long only when the server stopped reading;
		// on a loaded machine a 60 KB write of a reading server can take
		// seconds, which must not pass for a stop.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.WS.Write(ctx, websocket.MessageBinary, msg)
		cancel()
		if err != nil {
			// coder/websocket closes the connection when a write
			// times out, so the session is ending now.
			blocked = true
			break
		}
		frames, bytes := ts.held(t, id)
		if frames > queue || bytes > queueBytes {
			t.Fatalf("after %d messages the session holds %d frames, %d bytes; bounds are %d, %d", i+1, frames, bytes, queue, queueBytes)
		}
	}
	if !blocked {
		t.Fatalf("120 MB of receipt requests were all read: the server never stopped reading")
	}
	ts.obs.mu.Lock()
	paused := ts.obs.paused
	ts.obs.mu.Unlock()
	if paused == 0 {
		t.Errorf("ReaderPaused was never reported")
	}
	// Another session is served at once.
	other := dialRaw(t, ts.url)
	other.Connect()
	other.Send("SUBSCRIBE\nid:0\ndestination:/topic/x\nreceipt:ok\n\n\x00")
	other.Expect("RECEIPT")
}

// TestControlFrameBudget runs SUBSCRIBE/UNSUBSCRIBE churn: past the
// budget the session gets ERROR "too many control frames" and close 1008.
func TestControlFrameBudget(t *testing.T) {
	ts := startServer(t, Config{ControlLimit: 50, ControlWindow: time.Hour})
	c := dialRaw(t, ts.url)
	c.Connect()
	var b strings.Builder
	for range 100 {
		b.WriteString("SUBSCRIBE\nid:1\ndestination:/topic/busy\n\n\x00UNSUBSCRIBE\nid:1\n\n\x00")
	}
	c.Send(b.String())
	e := c.Expect("ERROR")
	if got := e.Get("message"); got != "too many control frames" {
		t.Fatalf("ERROR message = %q, want too many control frames", got)
	}
	if code := c.ExpectClosed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("close code %v, want 1008", code)
	}
	poll.Until(t, 5*time.Second, func() error {
		if n := ts.obs.closedCount(outcome.CloseControlFlood); n != 1 {
			return fmt.Errorf("closed control_flood = %d, want 1", n)
		}
		if n := ts.cfg.Broker.Subscribers("/topic/busy"); n != 0 {
			return fmt.Errorf("%d subscriptions left on /topic/busy", n)
		}
		return nil
	})

	// Within the budget nothing happens: 25 pairs with receipts on the
	// last one are 50 control frames.
	c2 := dialRaw(t, ts.url)
	c2.Connect()
	b.Reset()
	for range 24 {
		b.WriteString("SUBSCRIBE\nid:1\ndestination:/topic/busy\n\n\x00UNSUBSCRIBE\nid:1\n\n\x00")
	}
	b.WriteString("SUBSCRIBE\nid:1\ndestination:/topic/busy\n\n\x00UNSUBSCRIBE\nid:1\nreceipt:done\n\n\x00")
	c2.Send(b.String())
	c2.Expect("RECEIPT")
}

// limitedChain is wsserver's session limiter with limit SENDs per hour, so
// that a test never straddles a window edge.
func limitedChain(t *testing.T, limit int) *interceptor.Chain {
	t.Helper()
	st, err := interceptor.NewLimitStage(interceptor.LimitConfig{Limit: sessionlimit.Config{Limit: limit, Window: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewChain(nil, st)
}

// TestCommitChargesTheLimit fills transactions slowly and commits them:
// a COMMIT that fits the session's send limit delivers everything, one
// that does not delivers nothing and gets no RECEIPT.
func TestCommitChargesTheLimit(t *testing.T) {
	ts := startServer(t, Config{Chain: limitedChain(t, 20)})
	sub := dialRaw(t, ts.url)
	sub.Connect()
	sub.Send("SUBSCRIBE\nid:0\ndestination:/topic/t\nreceipt:s\n\n\x00")
	sub.Expect("RECEIPT")

	pub := dialRaw(t, ts.url)
	pubID := pub.Connect().Get("session")
	tx := func(name string, n int, receipt string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "BEGIN\ntransaction:%s\n\n\x00", name)
		for i := range n {
			fmt.Fprintf(&b, "SEND\ndestination:/topic/t\ntransaction:%s\n\n%s-%d\x00", name, name, i)
		}
		fmt.Fprintf(&b, "COMMIT\ntransaction:%s\nreceipt:%s\n\n\x00", name, receipt)
		return b.String()
	}
	pub.Send(tx("a", 15, "a-done"))
	if r := pub.Expect("RECEIPT"); r.Get("receipt-id") != "a-done" {
		t.Fatalf("receipt %q, want a-done", r.Get("receipt-id"))
	}
	for i := range 15 {
		if m := sub.Expect("MESSAGE"); string(m.Body) != fmt.Sprintf("a-%d", i) {
			t.Fatalf("message %d: %q", i, m.Body)
		}
	}
	// 5 left in the window: a commit of 10 drops all 10, silently.
	pub.Send(tx("b", 10, "b-done"))
	pub.Send("SEND\ndestination:/topic/t\nreceipt:single\n\nsingle\x00")
	if r := pub.Expect("RECEIPT"); r.Get("receipt-id") != "single" {
		t.Fatalf("receipt %q, want single (the dropped COMMIT gets none)", r.Get("receipt-id"))
	}
	if m := sub.Expect("MESSAGE"); string(m.Body) != "single" {
		t.Fatalf("after the dropped COMMIT the subscriber got %q, want single", m.Body)
	}
	s := ts.session(t, pubID)
	// CONNECT, 2 × (BEGIN, COMMIT), 26 SENDs: the 10 of the dropped
	// transaction are the only drops.
	if got := s.st.Counts(); got.Received != 31 || got.Passed != 21 || got.Dropped != 10 || got.Pending != 0 {
		t.Fatalf("publisher counts %+v, want received 31 = passed 21 + dropped 10", got)
	}
}

// TestTransactionBytesBound fills transactions with large bodies: the
// session is closed once it would hold more than MaxTransactionBytes.
func TestTransactionBytesBound(t *testing.T) {
	ts := startServer(t, Config{MaxTransactionBytes: 256 << 10})
	c := dialRaw(t, ts.url)
	c.Connect()
	body := strings.Repeat("x", 60<<10)
	c.Send("BEGIN\ntransaction:t\n\n\x00")
	for i := 0; i < 5; i++ {
		c.Send("SEND\ndestination:/topic/t\ntransaction:t\n\n" + body + "\x00")
	}
	e := c.Expect("ERROR")
	if got := e.Get("message"); got != "transaction too large" {
		t.Fatalf("ERROR message = %q, want transaction too large", got)
	}
	if !strings.Contains(string(e.Body), "262144 bytes") {
		t.Errorf("ERROR body %q does not name the byte bound", e.Body)
	}
	c.ExpectClosed()
}

// TestSlowConsumerByBytes sends large messages to a subscriber that does
// not read: it is closed with 1008 once its queue holds OutboundBytes,
// long before OutboundQueue frames.
func TestSlowConsumerByBytes(t *testing.T) {
	ts := startServer(t, Config{OutboundBytes: 512 << 10, WriteTimeout: time.Minute})
	slow := dialRaw(t, ts.url)
	slow.Connect()
	slow.Send("SUBSCRIBE\nid:0\ndestination:/topic/big\nreceipt:s\n\n\x00")
	slow.Expect("RECEIPT")

	pub := dialRaw(t, ts.url)
	pub.Connect()
	body := bytes.Repeat([]byte("x"), 60<<10)
	poll.Until(t, 30*time.Second, func() error {
		for range 20 {
			pub.Send("SEND\ndestination:/topic/big\n\n" + string(body) + "\x00")
		}
		ts.obs.mu.Lock()
		defer ts.obs.mu.Unlock()
		if ts.obs.slow == 0 {
			return fmt.Errorf("no slow consumer yet")
		}
		return nil
	})
	if code := slow.ExpectClosed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("slow consumer closed with %v, want 1008", code)
	}
	poll.Until(t, 5*time.Second, func() error {
		if n := ts.obs.closedCount(outcome.CloseSlowConsumer); n != 1 {
			return fmt.Errorf("closed slow_consumer = %d, want 1", n)
		}
		return nil
	})
}
