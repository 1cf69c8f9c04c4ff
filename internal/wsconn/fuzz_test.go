package wsconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzReader feeds a client's bytes to ReadMessage, whole and split in
// two at a point the input chooses, under a read limit the input chooses
// too, and checks what comes out against spec, an independent reading of
// RFC 6455: the same messages, then the same end (the stream runs out,
// the peer closes with the same code and reason, or the connection fails
// with 1002, 1007 or 1009), and nothing held past the read limit. What
// the connection writes must be well-formed server frames: pongs carrying
// a ping's payload, and at most one close, echoing the peer's code.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint16(len(s)/2), uint32(32<<10))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint16, limitSel uint32) {
		limit := 1 + int(limitSel%(128<<10))
		want := spec(in, limit)
		at := int(split) % (len(in) + 1)
		for _, chunks := range [][][]byte{{in}, {in[:at], in[at:]}} {
			nc := &fuzzConn{chunks: chunks}
			c := newConn(nc, "")
			c.SetReadLimit(limit)
			got := readAll(t, c, len(in))
			if !sameReading(got, want) {
				t.Fatalf("split at %d of %d, limit %d:\nread %v\nwant %v", at, len(in), limit, got, want)
			}
			checkWritten(t, nc.out.Bytes(), want)
		}
	})
}

// reading is what a stream of client bytes gives: its messages in order,
// then how it ends.
type reading struct {
	msgs   []message
	end    StatusCode // 0: the stream ran out; else the peer's close code or the failure's
	peer   bool       // the peer closed (end is its code), rather than the connection failing
	reason string     // the peer's close reason
	pings  [][]byte   // payloads of the pings read, which any pong must carry
}

type message struct {
	typ MessageType
	p   []byte
}

func sameReading(a, b reading) bool {
	if len(a.msgs) != len(b.msgs) || a.end != b.end || a.peer != b.peer || a.reason != b.reason {
		return false
	}
	for i := range a.msgs {
		if a.msgs[i].typ != b.msgs[i].typ || !bytes.Equal(a.msgs[i].p, b.msgs[i].p) {
			return false
		}
	}
	return true
}

// readAll calls ReadMessage until it fails, checking as it goes that no
// message and no buffer is larger than the limit allows, and that a call
// after the failure fails the same way.
func readAll(t *testing.T, c *Conn, inLen int) reading {
	t.Helper()
	var r reading
	for range inLen/2 + 2 {
		typ, p, err := c.ReadMessage()
		checkHeld(t, c)
		if err == nil {
			if len(p) > c.limit {
				t.Fatalf("a message of %d bytes under a limit of %d", len(p), c.limit)
			}
			r.msgs = append(r.msgs, message{typ, bytes.Clone(p)})
			continue
		}
		var pe *ProtocolError
		var ce *CloseError
		switch {
		case errors.Is(err, io.EOF):
		case errors.As(err, &ce):
			r.end, r.peer, r.reason = ce.Code, true, ce.Reason
		case errors.As(err, &pe):
			r.end = pe.Code
		case errors.Is(err, ErrMessageTooBig):
			r.end = StatusMessageTooBig
		case errors.Is(err, ErrInvalidUTF8):
			r.end = StatusInvalidFramePayloadData
		default:
			t.Fatalf("ReadMessage: unexpected error %v", err)
		}
		if _, _, again := c.ReadMessage(); again != err {
			t.Fatalf("ReadMessage after %v: %v, want the same error", err, again)
		}
		checkHeld(t, c)
		return r
	}
	t.Fatalf("more messages than %d bytes can hold", inLen)
	return r
}

// checkHeld fails the test if c holds more than its buffers and the read
// limit allow: the message buffer never grows past the limit (a pooled
// one may be up to maxPooledMessage already), whatever length a frame
// claims.
func checkHeld(t *testing.T, c *Conn) {
	t.Helper()
	if c.msg != nil && cap(*c.msg) > max(c.limit, maxPooledMessage) {
		t.Fatalf("message buffer of %d bytes under a limit of %d", cap(*c.msg), c.limit)
	}
	if c.in != nil && len(*c.in) != ReadBufferSize {
		t.Fatalf("read buffer of %d bytes", len(*c.in))
	}
	if len(c.stash) > ReadBufferSize || len(c.pongDue) > maxControlPayload {
		t.Fatalf("%d bytes stashed, %d of a ping kept", len(c.stash), len(c.pongDue))
	}
}

// checkWritten fails the test unless out is a sequence of unmasked final
// server frames: pongs with the payload of a ping that was read, and at
// most one close, last, carrying the peer's code (none if it sent none).
func checkWritten(t *testing.T, out []byte, want reading) {
	t.Helper()
	closed := false
	for len(out) > 0 {
		if closed {
			t.Fatalf("% x written after the close frame", out)
		}
		if len(out) < 2 || out[1]&0x80 != 0 || out[1]&0x7f > maxControlPayload || len(out) < 2+int(out[1]) {
			t.Fatalf("written % x: not an unmasked control frame", out)
		}
		b0, p := out[0], out[2:2+int(out[1])]
		out = out[2+len(p):]
		switch b0 {
		case finBit | fPong:
			found := false
			for _, ping := range want.pings {
				found = found || bytes.Equal(ping, p)
			}
			if !found {
				t.Fatalf("pong % x answers no ping read (%q)", p, want.pings)
			}
		case finBit | fClose:
			closed = true
			code := StatusNoStatusRcvd
			if len(p) > 0 {
				code = StatusCode(binary.BigEndian.Uint16(p))
			}
			if !want.peer || code != want.end || len(p) > 2 {
				t.Fatalf("close % x written, the peer's end being %+v", p, want)
			}
		default:
			t.Fatalf("written frame %#x % x, want a pong or a close", b0, p)
		}
	}
	if want.peer && !closed {
		t.Fatal("the peer's close frame was not answered")
	}
}

// spec reads in as RFC 6455 describes a server reading a client, written
// apart from the reader so that the two can be compared. Where the RFC
// leaves an order open, it takes the reader's: a frame header is judged
// before its payload (length's top bit, reserved bits, mask, opcode in
// its place, control frame rules, then the read limit); a text payload is
// judged as its bytes arrive, except a whole message of one frame that
// fits the read buffer, judged once it has all arrived.
func spec(in []byte, limit int) reading {
	var (
		r    reading
		msg  []byte
		typ  MessageType
		open bool
	)
	fail := func(code StatusCode) reading { r.end = code; return r }
	for {
		if len(in) < 2 {
			return r
		}
		fin, rsv, op, masked := in[0]&0x80 != 0, in[0]&0x70, in[0]&0x0f, in[1]&0x80 != 0
		n, hl := uint64(in[1]&0x7f), 2
		switch n {
		case 126:
			hl = 4
		case 127:
			hl = 10
		}
		if masked {
			hl += 4
		}
		if len(in) < hl {
			return r
		}
		switch n {
		case 126:
			n = uint64(binary.BigEndian.Uint16(in[2:]))
		case 127:
			n = binary.BigEndian.Uint64(in[2:])
		}
		var key []byte
		if masked {
			key = in[hl-4 : hl]
		}
		in = in[hl:]
		switch {
		case n>>63 != 0, rsv != 0, !masked:
			return fail(StatusProtocolError)
		}
		payload := func(k int) []byte {
			p := bytes.Clone(in[:k])
			for i := range p {
				p[i] ^= key[i%4]
			}
			in = in[k:]
			return p
		}
		switch op {
		case 0x8, 0x9, 0xA:
			if !fin || n > 125 {
				return fail(StatusProtocolError)
			}
			if uint64(len(in)) < n {
				return r
			}
			p := payload(int(n))
			switch op {
			case 0x9:
				r.pings = append(r.pings, p)
			case 0x8:
				return specClose(r, p)
			}
			continue
		case 0x0:
			if !open {
				return fail(StatusProtocolError)
			}
		case 0x1, 0x2:
			if open {
				return fail(StatusProtocolError)
			}
		default:
			return fail(StatusProtocolError)
		}
		if n > uint64(limit-len(msg)) {
			return fail(StatusMessageTooBig)
		}
		if !open && fin && n <= ReadBufferSize {
			if uint64(len(in)) < n {
				return r
			}
			p := payload(int(n))
			if op == 0x1 && !utf8.Valid(p) {
				return fail(StatusInvalidFramePayloadData)
			}
			r.msgs = append(r.msgs, message{MessageType(op), p})
			continue
		}
		if !open {
			typ, open, msg = MessageType(op), true, []byte{}
		}
		k := int(min(n, uint64(len(in))))
		msg = append(msg, payload(k)...)
		if typ == MessageText && !couldBeUTF8(msg) {
			return fail(StatusInvalidFramePayloadData)
		}
		if uint64(k) < n {
			return r
		}
		if fin {
			if typ == MessageText && !utf8.Valid(msg) {
				return fail(StatusInvalidFramePayloadData)
			}
			r.msgs = append(r.msgs, message{typ, msg})
			open, msg = false, nil
		}
	}
}

// specClose reads the peer's close frame payload (RFC 6455 sections
// 5.5.1 and 7.4).
func specClose(r reading, p []byte) reading {
	switch {
	case len(p) == 0:
		r.end, r.peer = StatusNoStatusRcvd, true
		return r
	case len(p) == 1:
		r.end = StatusProtocolError
		return r
	}
	code := binary.BigEndian.Uint16(p)
	registered := code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999
	switch {
	case !registered:
		r.end = StatusProtocolError
	case !utf8.Valid(p[2:]):
		r.end = StatusInvalidFramePayloadData
	default:
		r.end, r.peer, r.reason = StatusCode(code), true, string(p[2:])
	}
	return r
}

// couldBeUTF8 reports whether b is UTF-8 or could become UTF-8 with more
// bytes: it is, once a character cut short is taken off its end.
func couldBeUTF8(b []byte) bool {
	for cut := 0; cut <= 3 && cut <= len(b); cut++ {
		if utf8.Valid(b[:len(b)-cut]) && (cut == 0 || startsCharacter(b[len(b)-cut:])) {
			return true
		}
	}
	return false
}

// startsCharacter reports whether b, one to three bytes, starts a UTF-8
// character and stops short of its end, by the table of well-formed
// sequences in the Unicode Standard (chapter 3, table 3-7): a lead byte
// sets the length and the range of the byte after it; later bytes are
// 80..BF.
func startsCharacter(b []byte) bool {
	type form struct {
		lead0, lead1, lo, hi byte
		size                 int
	}
	forms := []form{
		{0xC2, 0xDF, 0x80, 0xBF, 2},
		{0xE0, 0xE0, 0xA0, 0xBF, 3},
		{0xE1, 0xEC, 0x80, 0xBF, 3},
		{0xED, 0xED, 0x80, 0x9F, 3},
		{0xEE, 0xEF, 0x80, 0xBF, 3},
		{0xF0, 0xF0, 0x90, 0xBF, 4},
		{0xF1, 0xF3, 0x80, 0xBF, 4},
		{0xF4, 0xF4, 0x80, 0x8F, 4},
	}
	for _, f := range forms {
		if b[0] < f.lead0 || b[0] > f.lead1 || len(b) >= f.size {
			continue
		}
		for i, c := range b[1:] {
			lo, hi := byte(0x80), byte(0xBF)
			if i == 0 {
				lo, hi = f.lo, f.hi
			}
			if c < lo || c > hi {
				return false
			}
		}
		return true
	}
	return false
}

// fuzzConn is a net.Conn whose reads return chunks in turn, then io.EOF,
// and whose writes are kept.
type fuzzConn struct {
	chunks [][]byte
	out    bytes.Buffer
}

func (c *fuzzConn) Read(b []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

func (c *fuzzConn) Write(b []byte) (int, error)      { return c.out.Write(b) }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return fuzzAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return fuzzAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

type fuzzAddr struct{}

func (fuzzAddr) Network() string { return "fuzz" }
func (fuzzAddr) String() string  { return "fuzz" }

// fuzzSeeds are frames as clients send them, written out here; the files
// under testdata/fuzz/FuzzReader add frames coder/websocket wrote.
func fuzzSeeds() [][]byte {
	// A browser masks each frame with a fresh key.
	browser := func(b0 byte, key [4]byte, p []byte) []byte {
		b := appendHeader(nil, b0, len(p), false)
		b[1] |= 0x80
		b = append(b, key[:]...)
		for i, c := range p {
			b = append(b, c^key[i&3])
		}
		return b
	}
	connect := []byte("CONNECT\naccept-version:1.2,1.1,1.0\nheart-beat:10000,10000\n\n\x00")
	long127 := func(n uint64) []byte { // a 64-bit length, the mask, no payload
		return binary.BigEndian.AppendUint64([]byte{finBit | fBinary, 0x80 | 127}, n)
	}
	return [][]byte{
		browser(finBit|fText, [4]byte{0x9c, 0x01, 0x5e, 0xe3}, connect),
		concat(
			clientFrame(fText, []byte("SEND\ndestination:/app/move\n\n{\"x\"")),
			clientFrame(finBit|fPing, []byte("p")),
			clientFrame(fCont, []byte(":1,\"é")),
			clientFrame(finBit|fCont, []byte("\"}\x00"))),
		concat(
			clientFrame(finBit|fPing, []byte("hello")),
			clientFrame(finBit|fPong, nil),
			clientFrame(finBit|fClose, closeBody(1000, "bye"))),
		clientFrame(finBit|fClose, closeBody(1001, "going away")),
		clientFrame(finBit|fClose, closeBody(4000, "partie terminée")),
		clientFrame(finBit|fClose, nil),
		clientFrame(finBit|fBinary, pattern(200, 1)),
		clientFrame(finBit|fText, text(5000, 2)),
		concat(long127(10), clientFrame(finBit|fBinary, pattern(10, 3))[2:]), // the key, the masked payload
		concat(long127(1<<40), maskKey[:]),
		clientFrame(fText, []byte("caf\xc3")),
		clientFrame(finBit|rsv1Bit|fText, []byte("deflated?")),
		clientFrame(finBit|0xB, nil),
	}
}

// TestSpec checks the reading FuzzReader compares against on seeds whose
// reading is known, so that a spec that reads nothing cannot pass.
func TestSpec(t *testing.T) {
	t.Parallel()
	seeds := fuzzSeeds()
	tests := []struct {
		name string
		in   []byte
		want reading
	}{
		{"browser CONNECT", seeds[0], reading{msgs: []message{{MessageText, []byte("CONNECT\naccept-version:1.2,1.1,1.0\nheart-beat:10000,10000\n\n\x00")}}}},
		{"fragments around a ping", seeds[1], reading{msgs: []message{{MessageText, []byte("SEND\ndestination:/app/move\n\n{\"x\":1,\"é\"}\x00")}}}},
		{"close 1000", seeds[2], reading{end: 1000, peer: true, reason: "bye"}},
		{"close with no code", seeds[5], reading{end: StatusNoStatusRcvd, peer: true}},
		{"64-bit length of 10", seeds[8], reading{msgs: []message{{MessageBinary, pattern(10, 3)}}}},
		{"64-bit length of 2^40", seeds[9], reading{end: StatusMessageTooBig}},
		{"a fragment ending inside a character", seeds[10], reading{}},
		{"rsv1", seeds[11], reading{end: StatusProtocolError}},
		{"opcode 0xB", seeds[12], reading{end: StatusProtocolError}},
		{"text that is not UTF-8", clientFrame(finBit|fText, []byte{0xff}), reading{end: StatusInvalidFramePayloadData}},
		{"a fragment that cannot become UTF-8", clientFrame(fText, []byte("a\xed\xa0")), reading{end: StatusInvalidFramePayloadData}},
	}
	for _, tt := range tests {
		got := spec(tt.in, 32<<10)
		got.pings = nil
		if !sameReading(got, tt.want) {
			t.Errorf("%s: spec = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
