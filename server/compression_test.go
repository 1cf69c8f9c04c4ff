package server

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/stompframe"
)

// deflateOffer is what browsers send (Chromium's offer).
const deflateOffer = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"

// inflateStream decompresses a permessage-deflate stream: messages
// each followed by the four bytes their sender left off (RFC 7692
// section 7.2.2), one message or, under context takeover, all of a
// connection's so far.
func inflateStream(t *testing.T, msgs ...[]byte) []byte {
	t.Helper()
	var in []byte
	for _, m := range msgs {
		in = append(append(in, m...), 0, 0, 0xff, 0xff)
	}
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(in)))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("inflating: %v", err)
	}
	return out
}

// compressedSession dials ts offering permessage-deflate, connects and
// subscribes to dest, and returns the session and the negotiated
// extension.
func compressedSession(t *testing.T, ts *testServer, dest string) (*tcpSession, string) {
	t.Helper()
	s, resp := dialTCPWith(t, ts.url, deflateOffer)
	connectTCP(t, s)
	subscribeTCP(t, s, dest)
	return s, resp.Header.Get("Sec-WebSocket-Extensions")
}

// TestCompressionSharedBroadcast has three subscribers that negotiated
// permessage-deflate receive one broadcast: each gets it compressed
// (RSV1), inflating to its exact MESSAGE frame, encoded as its own
// subscription line stored and then the same compressed bytes as the
// others, the broadcast's shared compressed part.
func TestCompressionSharedBroadcast(t *testing.T) {
	ts := startServer(t, Config{Compression: Compression{Enabled: true}})
	var subs []*tcpSession
	for range 3 {
		s, ext := compressedSession(t, ts, "/topic/room")
		if want := "permessage-deflate; server_no_context_takeover; client_no_context_takeover"; ext != want {
			t.Fatalf("negotiated %q, want %q", ext, want)
		}
		subs = append(subs, s)
	}
	body := strings.Repeat(`{"player":"ana","x":12,"y":40,"hp":97}`, 20)
	pub := dialTCP(t, ts.url)
	connectTCP(t, pub)
	if _, err := pub.nc.Write(maskedFrame(0x81, []byte("SEND\ndestination:/topic/room\ncontent-type:application/json\n\n"+body+"\x00"))); err != nil {
		t.Fatal(err)
	}
	var shared []byte
	for i, s := range subs {
		b0, p := s.nextFrame()
		if b0 != 0x81|0x40 {
			t.Fatalf("subscriber %d: first byte %#x, want a final compressed text frame (0xc1)", i, b0)
		}
		frame := inflateStream(t, p)
		dec := stompframe.NewDecoder(stompframe.Limits{})
		dec.Feed(frame)
		f, err := dec.Next()
		if err != nil || f == nil {
			t.Fatalf("subscriber %d: decoding the inflated %q: %v", i, frame, err)
		}
		want := fmt.Sprintf("MESSAGE\nsubscription:0\ndestination:/topic/room\nmessage-id:%s\ncontent-type:application/json\ncontent-length:%d\n\n%s\x00", f.Get("message-id"), len(body), body)
		if string(frame) != want {
			t.Fatalf("subscriber %d: inflated\n%q, want\n%q", i, frame, want)
		}
		head := wsconn.AppendStored(nil, []byte("MESSAGE\nsubscription:0\n"))
		if !bytes.HasPrefix(p, head) {
			t.Fatalf("subscriber %d: payload starts %q, want the stored subscription line %q", i, p[:min(len(p), len(head))], head)
		}
		if shared == nil {
			shared = p[len(head):]
			if 3*len(p) > len(frame) {
				t.Errorf("compressed %d bytes of a %d-byte frame of repeated JSON, want under a third", len(p), len(frame))
			}
		} else if !bytes.Equal(p[len(head):], shared) {
			t.Errorf("subscriber %d: compressed part differs from the first subscriber's", i)
		}
	}
	if got := ts.obs.compressedCount(); got != 3 {
		t.Errorf("SessionCompressed reported %d times, want 3 (the publisher offered nothing)", got)
	}
}

// TestCompressionBatch sends frames that travel in one WebSocket message,
// MESSAGEs and RECEIPTs mixed, to a compressing session: the message
// inflates to every frame, in order.
func TestCompressionBatch(t *testing.T) {
	ts := startServer(t, Config{Compression: Compression{Enabled: true}})
	s, _ := compressedSession(t, ts, "/topic/t")
	const n = 5
	var burst []byte
	for i := range n {
		burst = append(burst, fmt.Appendf(nil, "SEND\ndestination:/topic/t\nreceipt:r%d\n\n%d%s\x00", i, i, strings.Repeat("state ", 40))...)
	}
	if _, err := s.nc.Write(maskedFrame(0x81, burst)); err != nil {
		t.Fatal(err)
	}
	dec := stompframe.NewDecoder(stompframe.Limits{})
	var got []string
	most := 0 // the most frames one compressed message carried
	for len(got) < 2*n {
		b0, p := s.nextFrame()
		compressed := b0&0x40 != 0
		if compressed {
			p = inflateStream(t, p)
		}
		dec.Feed(p)
		before := len(got)
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if f == nil {
				break
			}
			switch f.Command {
			case "MESSAGE":
				got = append(got, "M"+string(f.Body[:1]))
			case "RECEIPT":
				got = append(got, "R"+f.Get("receipt-id")[1:])
			default:
				t.Fatalf("unexpected %s", f.Command)
			}
		}
		if compressed {
			most = max(most, len(got)-before)
		}
	}
	if most < 2 {
		t.Errorf("no compressed message carried more than %d frame(s), want a batch of several", most)
	}
	// The RECEIPT of a SEND follows its MESSAGE to the sender's own
	// subscription.
	want := []string{"M0", "R0", "M1", "R1", "M2", "R2", "M3", "R3", "M4", "R4"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("frames %v, want %v", got, want)
	}
}

// TestCompressionMinSize checks that a frame below the minimum size goes
// out uncompressed on a connection that negotiated compression.
func TestCompressionMinSize(t *testing.T) {
	ts := startServer(t, Config{Compression: Compression{Enabled: true, MinSize: 512}})
	s, _ := compressedSession(t, ts, "/topic/t")
	pub := dialTCP(t, ts.url)
	connectTCP(t, pub)
	for _, n := range []int{100, 1000} {
		if _, err := pub.nc.Write(maskedFrame(0x81, fmt.Appendf(nil, "SEND\ndestination:/topic/t\n\n%s\x00", strings.Repeat("a", n)))); err != nil {
			t.Fatal(err)
		}
		b0, p := s.nextFrame()
		compressed := b0&0x40 != 0
		if compressed != (n > 512) {
			t.Errorf("%d-byte body: compressed %v, want %v (MinSize 512)", n, compressed, n > 512)
		}
		if compressed {
			p = inflateStream(t, p)
		}
		if !bytes.Contains(p, []byte(strings.Repeat("a", n)+"\x00")) {
			t.Errorf("%d-byte body: frame %.80q does not carry it", n, p)
		}
	}
}

// TestCompressionOwnFrameLevel checks that a frame a session compresses
// for itself alone (its CONNECTED) is compressed at ownFrameLevel, not at
// the Level that shared MESSAGE encodings use: the same bytes as
// wsconn.AppendDeflated gives it at level 1, which differ from level 9's.
func TestCompressionOwnFrameLevel(t *testing.T) {
	ts := startServer(t, Config{Compression: Compression{Enabled: true, Level: 9, MinSize: -1}})
	s, _ := dialTCPWith(t, ts.url, deflateOffer)
	if _, err := s.nc.Write(maskedFrame(0x81, []byte("CONNECT\naccept-version:1.2\nhost:h\nheart-beat:0,0\n\n\x00"))); err != nil {
		t.Fatal(err)
	}
	b0, p := s.nextFrame()
	if b0 != 0x81|0x40 {
		t.Fatalf("first byte %#x, want a final compressed text frame (0xc1)", b0)
	}
	frame := inflateStream(t, p)
	if !bytes.HasPrefix(frame, []byte("CONNECTED\n")) {
		t.Fatalf("inflated %.40q, want CONNECTED", frame)
	}
	own, shared := wsconn.AppendDeflated(nil, frame, ownFrameLevel), wsconn.AppendDeflated(nil, frame, 9)
	if bytes.Equal(own, shared) {
		t.Fatalf("levels %d and 9 encode %q alike: the test cannot tell them apart", ownFrameLevel, frame)
	}
	if !bytes.Equal(p, own) {
		t.Errorf("CONNECTED compressed as % x, want level %d's % x (level 9's is % x)", p, ownFrameLevel, own, shared)
	}
}

// TestCompressionContextTakeover checks that with ContextTakeover the
// server keeps its window between messages: the answer allows it, each
// message inflates with the ones before it as its dictionary, and a
// message that repeats an earlier one costs a fraction of it.
func TestCompressionContextTakeover(t *testing.T) {
	ts := startServer(t, Config{Compression: Compression{Enabled: true, ContextTakeover: true}})
	s, ext := compressedSession(t, ts, "/topic/chat")
	if want := "permessage-deflate; client_no_context_takeover"; ext != want {
		t.Fatalf("negotiated %q, want %q", ext, want)
	}
	pub := dialTCP(t, ts.url)
	connectTCP(t, pub)
	var msgs [][]byte
	var sizes []int
	for i := range 4 {
		body := fmt.Sprintf(`{"user":"ana","room":"lobby","text":"see you all at the table in five minutes, message %d"}`, i)
		body += strings.Repeat(" ", 100)
		if _, err := pub.nc.Write(maskedFrame(0x81, []byte("SEND\ndestination:/topic/chat\n\n"+body+"\x00"))); err != nil {
			t.Fatal(err)
		}
		b0, p := s.nextFrame()
		if b0&0x40 == 0 {
			t.Fatalf("message %d not compressed", i)
		}
		msgs = append(msgs, p)
		sizes = append(sizes, len(p))
		all := inflateStream(t, msgs...)
		if !bytes.HasSuffix(all, []byte(body+"\x00")) {
			t.Fatalf("message %d: the stream so far ends %.80q, want the body", i, all[max(0, len(all)-80):])
		}
	}
	if 3*sizes[3] > sizes[0] {
		t.Errorf("compressed sizes %v: a message like the one before should cost under a third of the first", sizes)
	}
}

// TestCompressionOff checks that a server with compression off answers
// an offer with no extension and sends every frame uncompressed.
func TestCompressionOff(t *testing.T) {
	ts := startServer(t, Config{})
	s, ext := compressedSession(t, ts, "/topic/t")
	if ext != "" {
		t.Fatalf("negotiated %q with compression off, want nothing", ext)
	}
	if _, err := s.nc.Write(maskedFrame(0x81, []byte("SEND\ndestination:/topic/t\n\n"+strings.Repeat("b", 2000)+"\x00"))); err != nil {
		t.Fatal(err)
	}
	if b0, _ := s.nextFrame(); b0 != 0x81 {
		t.Errorf("first byte %#x, want an uncompressed final text frame (0x81)", b0)
	}
	if got := ts.obs.compressedCount(); got != 0 {
		t.Errorf("SessionCompressed reported %d times, want 0", got)
	}
}

// TestCompressionLatest checks latest-value delivery to a compressing
// subscriber: what it gets inflates to the newest MESSAGE.
func TestCompressionLatest(t *testing.T) {
	ts := startServer(t, Config{
		Compression:  Compression{Enabled: true},
		Destinations: func(string) DestinationOptions { return DestinationOptions{Rule: "state", Latest: true} },
	})
	s, _ := compressedSession(t, ts, "/topic/state")
	pub := dialTCP(t, ts.url)
	connectTCP(t, pub)
	var burst []byte
	for i := range 20 {
		burst = append(burst, fmt.Appendf(nil, "SEND\ndestination:/topic/state\n\n%02d%s\x00", i, strings.Repeat("s", 300))...)
	}
	if _, err := pub.nc.Write(maskedFrame(0x81, burst)); err != nil {
		t.Fatal(err)
	}
	dec := stompframe.NewDecoder(stompframe.Limits{})
	for last := ""; last != "19"; {
		b0, p := s.nextFrame()
		if b0&0x40 == 0 {
			t.Fatalf("first byte %#x, want a compressed frame", b0)
		}
		dec.Feed(inflateStream(t, p))
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			if f == nil {
				break
			}
			if f.Command != "MESSAGE" || len(f.Body) != 302 {
				t.Fatalf("got %s with a %d-byte body", f.Command, len(f.Body))
			}
			last = string(f.Body[:2])
		}
	}
}

// TestCompressionConfig checks the level's bounds.
func TestCompressionConfig(t *testing.T) {
	t.Parallel()
	for _, level := range []int{-1, 10} {
		_, err := New(Config{Compression: Compression{Enabled: true, Level: level}})
		if err == nil || !strings.Contains(err.Error(), "Compression.Level") {
			t.Errorf("Level %d: New error %v, want one naming Compression.Level", level, err)
		}
	}
	for _, level := range []int{0, 1, 9} {
		if _, err := New(Config{Compression: Compression{Enabled: true, Level: level}}); err != nil {
			t.Errorf("Level %d: New error %v, want none", level, err)
		}
	}
}
