package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// startListeningServer is startServer with the server's own Listener in
// front of the test listener, so that accepted sockets get
// Config.SocketSendBuffer. wrap, if not nil, wraps that listener again.
func startListeningServer(t *testing.T, cfg Config, wrap func(net.Listener) net.Listener) *testServer {
	t.Helper()
	cfg.Observer = nil
	return startServerWith(t, cfg, func(srv *Server, ln net.Listener) net.Listener {
		ln = srv.Listener(ln)
		if wrap != nil {
			ln = wrap(ln)
		}
		return ln
	})
}

// dialStuck opens a hand-written session with a small receive buffer,
// connects it and subscribes it to each of dests; it never reads again.
// It returns the session and its id.
func dialStuck(t *testing.T, url string, dests ...string) (*tcpSession, string) {
	t.Helper()
	s := dialTCP(t, url)
	_ = s.nc.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := s.nc.Write(maskedFrame(0x81, []byte("CONNECT\naccept-version:1.2\nhost:h\nheart-beat:0,0\n\n\x00"))); err != nil {
		t.Fatal(err)
	}
	_, p := s.next()
	_, rest, ok := bytes.Cut(p, []byte("\nsession:"))
	if !ok {
		t.Fatalf("CONNECTED without a session header: %.80q", p)
	}
	id, _, _ := bytes.Cut(rest, []byte("\n"))
	for i, d := range dests {
		if _, err := s.nc.Write(maskedFrame(0x81, []byte(fmt.Sprintf("SUBSCRIBE\nid:%d\ndestination:%s\nreceipt:s\n\n\x00", i, d)))); err != nil {
			t.Fatal(err)
		}
		if _, b := s.next(); !bytes.HasPrefix(b, []byte("RECEIPT")) {
			t.Fatalf("got %.40q, want the RECEIPT", b)
		}
	}
	return s, string(id)
}

// heldTotal sums what every open session holds for writing, exactly.
func (ts *testServer) heldTotal() (total int) {
	ts.reg.each(func(s *session) {
		_, bytes, _ := s.box.held()
		total += bytes
	})
	return total
}

// reasonOf returns the close reason recorded for the open session id, or
// nil.
func (ts *testServer) reasonOf(t *testing.T, id string) *outcome.Close {
	t.Helper()
	s := ts.session(t, id)
	return s.box.closeReason()
}

// TestOutboundBudgetShedsLargestQueues runs the slow-reader attack for
// real: sessions that never read hold backlogs of different sizes, then
// large messages go to all of them and to an honest reader. The server's
// total must stay within its bound plus one message per session, the
// largest backlogs must be the ones closed (with ERROR "slow consumer"
// and 1008), the smaller stuck session and a stuck session holding
// little must stay, and the honest reader must get every message.
func TestOutboundBudgetShedsLargestQueues(t *testing.T) {
	const (
		size  = 60_000
		limit = 1536 << 10
		hogs  = 4
		big   = 10
	)
	ts := startListeningServer(t, Config{
		OutboundQueue: 1 << 16, OutboundBytes: 1 << 20, OutboundTotalBytes: limit,
		SocketSendBuffer: minSocketSendBuffer, WriteTimeout: time.Minute,
	}, nil)
	body := strings.Repeat("m", size)

	pub := dialRaw(t, ts.url)
	pub.Connect()
	publish := func(dest string, n int) {
		t.Helper()
		for range n {
			pub.Send("SEND\ndestination:" + dest + "\n\n" + body + "\x00")
		}
		// The publisher's receipt says every SEND before it was handled,
		// and so delivered or refused.
		pub.Send("SEND\ndestination:/topic/none\nreceipt:r\n\n\x00")
		pub.Expect("RECEIPT")
	}

	// Stuck sessions: hog i holds 2(i+1) messages of its own; small holds
	// a few small ones.
	hogSess := make([]*tcpSession, hogs)
	hogIDs := make([]string, hogs)
	for i := range hogs {
		hogSess[i], hogIDs[i] = dialStuck(t, ts.url, fmt.Sprintf("/topic/hog.%d", i), "/topic/big")
	}
	_, smallID := dialStuck(t, ts.url, "/topic/small")
	honest := dialRaw(t, ts.url)
	honest.Connect()
	honest.Send("SUBSCRIBE\nid:0\ndestination:/topic/big\nreceipt:s\n\n\x00")
	honest.Expect("RECEIPT")
	for i := range hogs {
		publish(fmt.Sprintf("/topic/hog.%d", i), 2*(i+1))
	}
	pub.Send("SEND\ndestination:/topic/small\n\nhello\x00")
	publish("/topic/small", 2)
	before := make([]int, hogs)
	for i, id := range hogIDs {
		_, before[i] = ts.held(t, id)
		if i > 0 && before[i] <= before[i-1] {
			t.Fatalf("hog %d holds %d bytes, hog %d %d: want growing backlogs", i, before[i], i-1, before[i-1])
		}
	}
	if st := ts.OutboundStats(); st.Shed != 0 || st.Queued > limit {
		t.Fatalf("before the large messages: %+v, want nothing shed and the total within %d", st, limit)
	}

	// The count is within the bound plus one message per session; what
	// sessions hold exactly may be more by what the count rounds off,
	// under one write batch per session.
	sessions := hogs + 3
	bound := limit + sessions*(size+1024)
	for n := range big {
		publish("/topic/big", 1)
		if f := honest.Expect("MESSAGE"); len(f.Body) != size {
			t.Fatalf("honest message %d: %d bytes, want %d", n, len(f.Body), size)
		}
		if got := ts.OutboundStats().Queued; got > int64(bound) {
			t.Fatalf("after large message %d: OutboundStats().Queued = %d, want at most %d (the bound plus one message per session)", n, got, bound)
		}
		if got, want := ts.heldTotal(), bound+sessions*countStep; got > want {
			t.Fatalf("after large message %d: sessions hold %d bytes, want at most %d", n, got, want)
		}
	}

	// The shed hogs are the largest: a closed hog has only closed hogs
	// above it.
	shed := 0
	for i := hogs - 1; i >= 0; i-- {
		r := ts.reasonOf(t, hogIDs[i])
		switch {
		case r == outcome.CloseOutboundBudget && shed == hogs-1-i:
			shed++
		case r == outcome.CloseOutboundBudget:
			t.Errorf("hog %d (%d bytes before) was shed while a larger hog was not", i, before[i])
		case r != nil:
			t.Errorf("hog %d closed as %v", i, r)
		}
	}
	if shed < 2 || shed == hogs {
		t.Errorf("%d of %d hogs shed, want the largest few and not the smallest", shed, hogs)
	}
	if r := ts.reasonOf(t, smallID); r != nil {
		t.Errorf("the stuck session holding little was closed as %v", r)
	}
	if st := ts.OutboundStats(); st.Shed != uint64(shed) || st.Limit != limit {
		t.Errorf("OutboundStats() = %+v, want Shed %d and Limit %d", st, shed, limit)
	}

	// The largest hog, reading at last, finds its ERROR and the close
	// after the message its writer was in.
	h := hogSess[hogs-1]
	var sawError bool
	for {
		op, p := h.next()
		if op == 0x1 && bytes.HasPrefix(p, []byte("ERROR")) {
			sawError = bytes.Contains(p, []byte("\nmessage:slow consumer\n"))
		}
		if op == 0x8 {
			if code := binary.BigEndian.Uint16(p); code != 1008 || !sawError {
				t.Errorf("close %d %q after ERROR slow consumer: %v; want 1008 after it", code, p[2:], sawError)
			}
			break
		}
	}
	waitFor(t, func() bool { return ts.obs.closedCount(outcome.CloseOutboundBudget) >= 1 })

	// Once every client is gone, nothing is left counted.
	for _, s := range hogSess {
		_ = s.nc.Close()
	}
	_ = honest.WS.CloseNow()
	_ = pub.WS.CloseNow()
	waitFor(t, func() bool { return ts.Sessions() <= 1 }) // small still open
	if c := ts.obs.closedCount(outcome.CloseOutboundBudget); c != shed {
		t.Errorf("%d sessions closed as %v, want %d", c, outcome.CloseOutboundBudget, shed)
	}
}

// TestOutboundTotalReturnsToZero checks the server's count against what
// sessions hold once they are gone: a count that leaked would shrink the
// budget for good.
func TestOutboundTotalReturnsToZero(t *testing.T) {
	ts := startListeningServer(t, Config{OutboundBytes: 1 << 20, OutboundTotalBytes: 4 << 20, SocketSendBuffer: minSocketSendBuffer}, nil)
	pub := dialRaw(t, ts.url)
	pub.Connect()
	var stuck []*tcpSession
	for range 3 {
		s, _ := dialStuck(t, ts.url, "/topic/z")
		stuck = append(stuck, s)
	}
	body := strings.Repeat("z", 40_000)
	for range 8 {
		pub.Send("SEND\ndestination:/topic/z\n\n" + body + "\x00")
	}
	pub.Send("SEND\ndestination:/topic/none\nreceipt:r\n\n\x00")
	pub.Expect("RECEIPT")
	if q := ts.OutboundStats().Queued; q == 0 {
		t.Fatal("nothing counted while three sessions do not read")
	}
	for _, s := range stuck {
		_ = s.nc.Close()
	}
	waitFor(t, func() bool { return ts.Sessions() == 1 })
	if q := ts.OutboundStats().Queued; q != 0 {
		t.Errorf("OutboundStats().Queued = %d with no stuck session left, want 0", q)
	}
}

func TestOutboundConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"total below one session", Config{OutboundBytes: 1 << 20, OutboundTotalBytes: 1 << 10}, "OutboundTotalBytes 1024 is below OutboundBytes"},
		{"tiny send buffer", Config{SocketSendBuffer: 100}, "SocketSendBuffer 100 is below"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, cfg := range []Config{{OutboundTotalBytes: -1, SocketSendBuffer: -1}, {}} {
		srv, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		want := int64(DefaultOutboundTotalBytes)
		if cfg.OutboundTotalBytes < 0 {
			want = 0
		}
		if got := srv.OutboundStats().Limit; got != want {
			t.Errorf("OutboundTotalBytes %d: Limit %d, want %d", cfg.OutboundTotalBytes, got, want)
		}
	}
}

// TestFrameLenIsWhatIsWritten: the writer's batches are cut by frameLen,
// which must be the length appendItem writes for every kind of
// subscription.
func TestFrameLenIsWhatIsWritten(t *testing.T) {
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("body:with\nescapes")}
	f.Add("destination", "/topic/a")
	f.Add("x-note", "colon:and\nnewline")
	m := broker.NewMessage("m-17", f)
	for _, tt := range []struct {
		ack broker.AckMode
		v   stompframe.Version
	}{
		{broker.AckAuto, stompframe.V12}, {broker.AckClient, stompframe.V12},
		{broker.AckClient, stompframe.V11}, {broker.AckAuto, stompframe.V10},
	} {
		sub := broker.NewSubscription("s", "/topic/a", tt.ack, tt.v, discard{})
		it := outItem{msg: m, sub: sub}
		b, _ := appendItem(nil, &it)
		if got := frameLen(&it); got != len(b) {
			t.Errorf("ack %v, STOMP %v: frameLen = %d, want %d", tt.ack, tt.v, got, len(b))
		}
	}
}
