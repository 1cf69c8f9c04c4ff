package server

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// connectTCP sends CONNECT on a hand-written WebSocket and reads
// CONNECTED.
func connectTCP(t *testing.T, s *tcpSession) {
	t.Helper()
	if _, err := s.nc.Write(maskedFrame(0x81, []byte("CONNECT\naccept-version:1.2\nhost:h\nheart-beat:0,0\n\n\x00"))); err != nil {
		t.Fatal(err)
	}
	if op, p := s.next(); op != 0x1 || !bytes.HasPrefix(p, []byte("CONNECTED")) {
		t.Fatalf("got opcode %x %.40q, want CONNECTED", op, p)
	}
}

// subscribeTCP subscribes a hand-written WebSocket session to dest and
// waits for the subscription's RECEIPT.
func subscribeTCP(t *testing.T, s *tcpSession, dest string) {
	t.Helper()
	if _, err := s.nc.Write(maskedFrame(0x81, []byte("SUBSCRIBE\nid:0\ndestination:"+dest+"\nreceipt:s\n\n\x00"))); err != nil {
		t.Fatal(err)
	}
	if op, b := s.next(); op != 0x1 || !bytes.HasPrefix(b, []byte("RECEIPT")) {
		t.Fatalf("got %x %.40q, want the RECEIPT", op, b)
	}
}

// stompFrames decodes the STOMP frames in the text messages s reads until
// it has n of them.
func stompFrames(t *testing.T, s *tcpSession, n int) []*stompframe.Frame {
	t.Helper()
	dec := stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: 1 << 20})
	var out []*stompframe.Frame
	for len(out) < n {
		op, p := s.next()
		if op != 0x1 {
			continue
		}
		dec.Feed(p)
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if f == nil {
				break
			}
			out = append(out, f.Clone())
		}
	}
	return out
}

// TestReceiptsPastTheQueueKeepFlowing has a client ask a receipt for
// every SEND, in one write of far more frames than its outbound queue
// holds. The reader holds its own writer back (the RECEIPTs of what it
// has read go out together) and, with the queue full, waits for it to
// drain: it must let the writer go before it waits, or the session
// stops for good.
func TestReceiptsPastTheQueueKeepFlowing(t *testing.T) {
	ts := startServer(t, Config{OutboundQueue: 8, ControlLimit: 10000})
	s := dialTCP(t, ts.url)
	connectTCP(t, s)
	const n = 300
	var burst []byte
	for i := range n {
		burst = append(burst, maskedFrame(0x81, fmt.Appendf(nil, "SEND\ndestination:/topic/t\nreceipt:r%d\n\n%d\x00", i, i))...)
	}
	if _, err := s.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	for i, f := range stompFrames(t, s, n) {
		if want := "r" + strconv.Itoa(i); f.Command != "RECEIPT" || f.Get("receipt-id") != want {
			t.Fatalf("frame %d: %s %v, want the RECEIPT for %s", i, f.Command, f.Headers, want)
		}
	}
	ts.obs.mu.Lock()
	paused := ts.obs.paused
	ts.obs.mu.Unlock()
	if paused == 0 {
		t.Error("the reader never waited for its queue; the test did not reach the case it is for")
	}
}

// TestHeldBackWritersDoNotWaitOnAStuckPong: a publisher whose own socket
// is full (it reads nothing) sends to a room and then pings. Answering
// the ping waits on that socket; the room's delivery, held back by the
// publisher's reader, must go out before that wait, not when the
// publisher's write times out.
func TestHeldBackWritersDoNotWaitOnAStuckPong(t *testing.T) {
	ts := startServer(t, Config{OutboundQueue: 100000, OutboundBytes: 256 << 20, WriteTimeout: 30 * time.Second})
	room := dialRaw(t, ts.url, "v12.stomp")
	room.Connect()
	room.Send("SUBSCRIBE\nid:0\ndestination:/topic/room\nreceipt:s\n\n\x00")
	room.Expect("RECEIPT")

	p := dialTCP(t, ts.url)
	_ = p.nc.SetDeadline(time.Now().Add(2 * time.Minute))
	connectTCP(t, p)
	subscribeTCP(t, p, "/topic/bulk")
	// Fill p's socket: it reads nothing from here on, so its writer
	// ends up blocked in a write, holding the connection's write side.
	bulk := dialRaw(t, ts.url, "v12.stomp")
	bulk.Connect()
	body := strings.Repeat("x", 60<<10)
	for range 1000 {
		bulk.Send("SEND\ndestination:/topic/bulk\n\n" + body + "\x00")
	}
	bulk.Send("SEND\ndestination:/topic/bulk\nreceipt:done\n\n\x00")
	bulk.Expect("RECEIPT")

	var b []byte
	b = append(b, maskedFrame(0x81, []byte("SEND\ndestination:/topic/room\n\nhello\x00"))...)
	b = append(b, maskedFrame(0x89, []byte("p"))...)
	if _, err := p.nc.Write(b); err != nil {
		t.Fatal(err)
	}
	m := room.Expect("MESSAGE")
	if string(m.Body) != "hello" {
		t.Fatalf("room got %q", m.Body)
	}
	if ts.obs.closedCount(outcome.CloseClientGone) != 0 || ts.Sessions() != 3 {
		t.Fatalf("the room's message came only after the stuck publisher's session ended (%d sessions open)", ts.Sessions())
	}
}

// TestFlushedFramesStayWholeOnAFullSocket publishes to a subscriber that
// reads nothing until far more than its socket takes is queued, so
// writes started by publishers' batches are cut short and finished by a
// writer goroutine; then it reads everything: every frame whole, none
// lost, in order.
func TestFlushedFramesStayWholeOnAFullSocket(t *testing.T) {
	ts := startServer(t, Config{OutboundQueue: 100000, OutboundBytes: 64 << 20})
	sub := dialTCP(t, ts.url)
	_ = sub.nc.SetDeadline(time.Now().Add(2 * time.Minute))
	connectTCP(t, sub)
	subscribeTCP(t, sub, "/topic/t")
	pub := dialRaw(t, ts.url, "v12.stomp")
	pub.Connect()
	const n = 3000
	pad := strings.Repeat("y", 3000)
	for i := range n {
		pub.Send(fmt.Sprintf("SEND\ndestination:/topic/t\n\n%d %s\x00", i, pad))
	}
	for i, f := range stompFrames(t, sub, n) {
		if want := fmt.Sprintf("%d %s", i, pad); f.Command != "MESSAGE" || string(f.Body) != want {
			t.Fatalf("frame %d: %s %.20q, want MESSAGE %.20q", i, f.Command, f.Body, want)
		}
	}
}

// blockingStage holds a SEND to /topic/block on its reader until release
// closes: a reader busy with something else for as long as the test
// likes, without waiting for input.
type blockingStage struct{ release chan struct{} }

func (b blockingStage) Handle(_ *interceptor.Session, f *stompframe.Frame, _ time.Time) interceptor.Result {
	if f.Command == stompframe.CommandSend && f.Get("destination") == "/topic/block" {
		<-b.release
	}
	return interceptor.Continue()
}

// TestHeldBackWritersGoAfterMaxBatchedFrames: a publisher whose socket
// never runs dry must not hold back another session's delivery for more
// than maxBatchedFrames of its own frames. Here its reader sends to a
// room, handles maxBatchedFrames more SENDs and is then kept busy: the
// room's MESSAGE must arrive while it is.
func TestHeldBackWritersGoAfterMaxBatchedFrames(t *testing.T) {
	stage := blockingStage{release: make(chan struct{})}
	ts := startServer(t, Config{Chain: interceptor.NewChain(nil, stage)})
	released := false
	release := func() {
		if !released {
			released = true
			close(stage.release)
		}
	}
	t.Cleanup(release)
	room := dialRaw(t, ts.url, "v12.stomp")
	room.Connect()
	room.Send("SUBSCRIBE\nid:0\ndestination:/topic/room\nreceipt:s\n\n\x00")
	room.Expect("RECEIPT")

	p := dialTCP(t, ts.url)
	connectTCP(t, p)
	b := maskedFrame(0x81, []byte("SEND\ndestination:/topic/room\n\nhello\x00"))
	for range maxBatchedFrames {
		b = append(b, maskedFrame(0x81, []byte("SEND\ndestination:/topic/other\n\nx\x00"))...)
	}
	b = append(b, maskedFrame(0x81, []byte("SEND\ndestination:/topic/block\n\nx\x00"))...)
	if _, err := p.nc.Write(b); err != nil {
		t.Fatal(err)
	}
	m := room.Expect("MESSAGE")
	if string(m.Body) != "hello" {
		t.Fatalf("room got %q", m.Body)
	}
	release()
}

// TestRoomsEndWhileFlushing cuts every member of busy rooms at once, while
// their readers are writing to each other: every session must end. A
// reader that closed another member's connection from inside its own read
// would wait for that member's read to end, and members doing it to each
// other in a ring would wait forever.
func TestRoomsEndWhileFlushing(t *testing.T) {
	ts := startServer(t, Config{})
	const members, roomSize = 180, 9
	conns := make([]*tcpSession, members)
	sends := make([][]byte, members)
	for i := range conns {
		c := dialTCP(t, ts.url)
		connectTCP(t, c)
		room := fmt.Sprintf("/topic/room.%d", i/roomSize)
		if _, err := c.nc.Write(maskedFrame(0x81, []byte("SUBSCRIBE\nid:0\ndestination:"+room+"\n\n\x00"))); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		sends[i] = maskedFrame(0x81, []byte("SEND\ndestination:"+room+"\n\nmove\x00"))
	}
	done := make(chan struct{}, members)
	for i, c := range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				if _, err := c.nc.Write(sends[i]); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	// The rooms busy is the input under test; the cut comes while they
	// still are, with MESSAGEs unread, so each client's end is a reset.
	time.Sleep(500 * time.Millisecond)
	for _, c := range conns {
		_ = c.nc.Close()
	}
	for range members {
		<-done
	}
	poll.Until(t, 20*time.Second, func() error {
		if n := ts.Sessions(); n != 0 {
			return fmt.Errorf("%d of %d sessions still open after their clients were cut", n, members)
		}
		return nil
	})
}
