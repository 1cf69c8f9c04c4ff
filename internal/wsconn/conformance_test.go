package wsconn

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pattern returns n bytes that repeat no short cycle, so that a payload
// shifted or unmasked at the wrong offset does not compare equal.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/251) + seed
	}
	return b
}

// text returns n ASCII letters, different for each seed.
func text(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i+int(seed))%26)
	}
	return b
}

// checkEnd fails the test unless the handler's echo loop ended with an
// error for which match is true, and later reads failed too.
func checkEnd(t *testing.T, o outcome, what string, match func(error) bool) {
	t.Helper()
	if o.accept != nil {
		t.Fatalf("Accept: %v", o.accept)
	}
	if !match(o.end) {
		t.Errorf("ReadMessage ended with %v, want %s", o.end, what)
	}
	if o.again == nil {
		t.Errorf("ReadMessage after %v returned no error", o.end)
	}
}

func isProtocolError(code StatusCode) func(error) bool {
	return func(err error) bool {
		var pe *ProtocolError
		return errors.As(err, &pe) && pe.Code == code
	}
}

// isCloseCode matches a *CloseError with code and any reason.
func isCloseCode(code StatusCode) func(error) bool {
	return func(err error) bool { return CloseStatus(err) == code }
}

func isCloseError(code StatusCode, reason string) func(error) bool {
	return func(err error) bool {
		var ce *CloseError
		return errors.As(err, &ce) && ce.Code == code && ce.Reason == reason
	}
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	ping126 := clientFrame(finBit|fPing, text(126, 0))
	tests := []struct {
		name string
		send []byte
		code int
		echo []byte // what the server sends before its close frame
	}{
		{"unmasked text frame", serverFrame(finBit|fText, []byte("hi")), 1002, nil},
		{"unmasked close frame", serverFrame(finBit|fClose, closeBody(1000, "")), 1002, nil},
		{"rsv1", clientFrame(finBit|rsv1Bit|fText, []byte("hi")), 1002, nil},
		{"rsv2", clientFrame(finBit|rsv2Bit|fText, []byte("hi")), 1002, nil},
		{"rsv3", clientFrame(finBit|rsv3Bit|fBinary, []byte("hi")), 1002, nil},
		{"rsv1 on a ping", clientFrame(finBit|rsv1Bit|fPing, nil), 1002, nil},
		{"rsv on a continuation", concat(
			clientFrame(fText, []byte("a")),
			clientFrame(finBit|rsv2Bit|fCont, []byte("b"))), 1002, nil},
		{"opcode 3", clientFrame(finBit|0x3, []byte("x")), 1002, nil},
		{"opcode 4", clientFrame(finBit|0x4, nil), 1002, nil},
		{"opcode 5", clientFrame(finBit|0x5, []byte("x")), 1002, nil},
		{"opcode 6", clientFrame(finBit|0x6, []byte("x")), 1002, nil},
		{"opcode 7", clientFrame(finBit|0x7, []byte("x")), 1002, nil},
		{"opcode 0xB", clientFrame(finBit|0xB, []byte("x")), 1002, nil},
		{"opcode 0xC", clientFrame(finBit|0xC, nil), 1002, nil},
		{"opcode 0xD", clientFrame(finBit|0xD, []byte("x")), 1002, nil},
		{"opcode 0xE", clientFrame(finBit|0xE, []byte("x")), 1002, nil},
		{"opcode 0xF", clientFrame(finBit|0xF, []byte("x")), 1002, nil},
		{"reserved opcode inside a message", concat(
			clientFrame(fBinary, []byte("a")),
			clientFrame(finBit|0x3, []byte("b"))), 1002, nil},
		{"fragmented ping", clientFrame(fPing, []byte("p")), 1002, nil},
		{"fragmented pong", clientFrame(fPong, []byte("p")), 1002, nil},
		{"fragmented close", clientFrame(fClose, closeBody(1000, "")), 1002, nil},
		{"ping of 126 bytes", ping126, 1002, nil},
		{"ping of 126 bytes, header only", ping126[:8], 1002, nil},
		{"pong of 126 bytes", clientFrame(finBit|fPong, text(126, 1)), 1002, nil},
		{"close of 126 bytes", clientFrame(finBit|fClose, closeBody(1000, string(text(124, 2)))), 1002, nil},
		{"continuation first", clientFrame(finBit|fCont, []byte("x")), 1002, nil},
		{"continuation after a whole message", concat(
			clientFrame(finBit|fText, []byte("whole")),
			clientFrame(finBit|fCont, []byte("x"))), 1002,
			serverFrame(finBit|fText, []byte("whole"))},
		{"text while a text message is open", concat(
			clientFrame(fText, []byte("Hel")),
			clientFrame(finBit|fText, []byte("lo"))), 1002, nil},
		{"binary while a text message is open", concat(
			clientFrame(fText, []byte("Hel")),
			clientFrame(fBinary, []byte("lo"))), 1002, nil},
		{"64-bit length with the top bit set", []byte{
			0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 5,
			maskKey[0], maskKey[1], maskKey[2], maskKey[3]}, 1002, nil},
		{"close payload of one byte", clientFrame(finBit|fClose, []byte{0x03}), 1002, nil},
		{"close code 0", clientFrame(finBit|fClose, closeBody(0, "")), 1002, nil},
		{"close code 999", clientFrame(finBit|fClose, closeBody(999, "")), 1002, nil},
		{"close code 1004", clientFrame(finBit|fClose, closeBody(1004, "")), 1002, nil},
		{"close code 1005", clientFrame(finBit|fClose, closeBody(1005, "")), 1002, nil},
		{"close code 1006", clientFrame(finBit|fClose, closeBody(1006, "")), 1002, nil},
		{"close code 1015", clientFrame(finBit|fClose, closeBody(1015, "")), 1002, nil},
		{"close code 1016", clientFrame(finBit|fClose, closeBody(1016, "")), 1002, nil},
		{"close code 2000", clientFrame(finBit|fClose, closeBody(2000, "")), 1002, nil},
		{"close code 2999", clientFrame(finBit|fClose, closeBody(2999, "")), 1002, nil},
		{"close code 5000", clientFrame(finBit|fClose, closeBody(5000, "")), 1002, nil},
		{"close code 65535", clientFrame(finBit|fClose, closeBody(65535, "")), 1002, nil},
		{"close reason not UTF-8", clientFrame(finBit|fClose, closeBody(1000, "ok\xff")), 1007, nil},
		{"close reason with a cut character", clientFrame(finBit|fClose, closeBody(1000, "\xe2\x82")), 1007, nil},
		{"close reason with a surrogate", clientFrame(finBit|fClose, closeBody(1001, "\xed\xa0\x80")), 1007, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{})
			c := dial(t, srv.addr)
			c.write(tt.send)
			c.expect(tt.echo)
			reason := c.expectClose(tt.code)
			if reason == "" {
				t.Errorf("close frame %d carries no reason", tt.code)
			}
			// Answer as a client should; the server may have closed
			// already, so the write may fail.
			_, _ = c.nc.Write(clientFrame(finBit|fClose, closeBody(tt.code, "")))
			c.expectEOF(true)
			// Seeing the end of the server's stream, a client closes its
			// own; the server waits for that (at most CloseTimeout).
			_ = c.nc.Close()
			o := srv.next(t)
			checkEnd(t, o, fmt.Sprintf("a *ProtocolError with code %d", tt.code), isProtocolError(StatusCode(tt.code)))
			if o.closeErr != nil {
				t.Errorf("Close(%d): %v", tt.code, o.closeErr)
			}
		})
	}
}

func TestMessageTooBig(t *testing.T) {
	t.Parallel()
	header := func(b0 byte, n int) []byte { return appendHeader(nil, b0, n, true) }
	tests := []struct {
		name  string
		limit int
		send  []byte // never the payload that is too big
		echo  []byte // what the server sends before its close frame
	}{
		{"64-bit length over the default limit", 0, header(finBit|fBinary, 1<<20), nil},
		{"16-bit length one over the default limit", 0, header(finBit|fText, 32<<10+1), nil},
		{"16-bit length over a small limit", 1000, header(finBit|fBinary, 1001), nil},
		{"7-bit length over a tiny limit", 10, header(finBit|fText, 11), nil},
		{"first fragment over the limit", 1000, header(fText, 1001), nil},
		{"fragments adding up over the limit", 1000, concat(
			clientFrame(fBinary, pattern(600, 1)),
			clientFrame(fCont, pattern(300, 2)),
			header(finBit|fCont, 101)), nil},
		{"after a message that fit", 1000, concat(
			clientFrame(finBit|fText, text(1000, 3)),
			header(finBit|fText, 1001)),
			serverFrame(finBit|fText, text(1000, 3))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{limit: tt.limit})
			c := dial(t, srv.addr)
			c.write(tt.send)
			c.expect(tt.echo)
			c.expectClose(1009)
			_, _ = c.nc.Write(clientFrame(finBit|fClose, closeBody(1009, "")))
			c.expectEOF(true)
			// Seeing the end of the server's stream, a client closes its
			// own; the server waits for that (at most CloseTimeout).
			_ = c.nc.Close()
			o := srv.next(t)
			checkEnd(t, o, "ErrMessageTooBig", func(err error) bool { return errors.Is(err, ErrMessageTooBig) })
		})
	}
}

func TestEcho(t *testing.T) {
	t.Parallel()
	// manyFrames is 40 text frames of 150 bytes: 6,240 bytes on the wire,
	// more than one read buffer, so that a frame straddles two reads.
	var many, manyEcho []byte
	for i := range 40 {
		many = append(many, clientFrame(finBit|fText, text(150, byte(i)))...)
		manyEcho = append(manyEcho, serverFrame(finBit|fText, text(150, byte(i)))...)
	}
	tests := []struct {
		name  string
		limit int
		send  []byte // written in one write
		want  []byte // exactly what the server sends back
	}{
		{"text", 0,
			clientFrame(finBit|fText, []byte("hello")),
			serverFrame(finBit|fText, []byte("hello"))},
		{"empty text", 0,
			clientFrame(finBit|fText, nil),
			[]byte{0x81, 0x00}},
		{"binary", 0,
			clientFrame(finBit|fBinary, []byte{0, 1, 2, 0xff}),
			[]byte{0x82, 0x04, 0, 1, 2, 0xff}},
		{"binary that is not UTF-8 is returned as it came", 0,
			clientFrame(finBit|fBinary, []byte{0xff, 0xfe}),
			[]byte{0x82, 0x02, 0xff, 0xfe}},
		{"125 bytes, 7-bit length", 0,
			clientFrame(finBit|fBinary, pattern(125, 1)),
			append([]byte{0x82, 125}, pattern(125, 1)...)},
		{"126 bytes, 16-bit length", 0,
			clientFrame(finBit|fBinary, pattern(126, 2)),
			append([]byte{0x82, 126, 0, 126}, pattern(126, 2)...)},
		{"200 bytes, 16-bit length", 100 << 10,
			clientFrame(finBit|fBinary, pattern(200, 3)),
			append([]byte{0x82, 126, 0, 200}, pattern(200, 3)...)},
		{"one frame larger than the read buffer", 0,
			clientFrame(finBit|fBinary, pattern(5000, 4)),
			serverFrame(finBit|fBinary, pattern(5000, 4))},
		{"exactly the default limit", 0,
			clientFrame(finBit|fBinary, pattern(32<<10, 5)),
			append([]byte{0x82, 126, 0x80, 0x00}, pattern(32<<10, 5)...)},
		{"65535 bytes, 16-bit length", 100 << 10,
			clientFrame(finBit|fBinary, pattern(65535, 6)),
			append([]byte{0x82, 126, 0xff, 0xff}, pattern(65535, 6)...)},
		{"65536 bytes, 64-bit length", 100 << 10,
			clientFrame(finBit|fBinary, pattern(65536, 7)),
			append([]byte{0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}, pattern(65536, 7)...)},
		{"70000 bytes, 64-bit length", 100 << 10,
			clientFrame(finBit|fBinary, pattern(70000, 8)),
			append([]byte{0x82, 127, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70}, pattern(70000, 8)...)},
		{"fragments larger than the read buffer", 0, concat(
			clientFrame(fText, text(3000, 1)),
			clientFrame(fCont, text(3000, 2)),
			clientFrame(finBit|fCont, text(3000, 3))),
			serverFrame(finBit|fText, concat(text(3000, 1), text(3000, 2), text(3000, 3)))},
		{"fragmented message up to a raised limit", 100 << 10, concat(
			clientFrame(fBinary, pattern(40000, 1)),
			clientFrame(finBit|fCont, pattern(40000, 2))),
			serverFrame(finBit|fBinary, concat(pattern(40000, 1), pattern(40000, 2)))},
		{"ping of 125 bytes", 0,
			clientFrame(finBit|fPing, text(125, 9)),
			append([]byte{0x8a, 125}, text(125, 9)...)},
		{"unsolicited pong is ignored", 0, concat(
			clientFrame(finBit|fPong, []byte("x")),
			clientFrame(finBit|fText, []byte("after"))),
			serverFrame(finBit|fText, []byte("after"))},
		{"several frames in one write", 0, concat(
			clientFrame(finBit|fText, []byte("one")),
			clientFrame(finBit|fBinary, []byte("two")),
			clientFrame(finBit|fPong, []byte("3")),
			clientFrame(fText, []byte("fo")),
			clientFrame(finBit|fCont, []byte("ur"))), concat(
			serverFrame(finBit|fText, []byte("one")),
			serverFrame(finBit|fBinary, []byte("two")),
			serverFrame(finBit|fText, []byte("four")))},
		{"empty fragments", 0, concat(
			clientFrame(fBinary, nil),
			clientFrame(fCont, []byte{1, 2}),
			clientFrame(fCont, nil),
			clientFrame(finBit|fCont, nil)),
			[]byte{0x82, 0x02, 1, 2}},
		{"40 frames of 150 bytes in one write", 0, many, manyEcho},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			echoes(t, serverConfig{limit: tt.limit}, tt.send, tt.want)
		})
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	pong := func(p string) frame { return frame{finBit | fPong, []byte(p)} }
	msg := func(b0 byte, p string) frame { return frame{finBit | b0, []byte(p)} }

	t.Run("between fragments", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		c.write(concat(clientFrame(fText, []byte("Hel")), clientFrame(finBit|fPing, []byte("p1"))))
		// The pong must not wait for the message to end.
		c.expect([]byte{0x8a, 0x02, 'p', '1'})
		c.write(clientFrame(finBit|fCont, []byte("lo")))
		c.expect([]byte{0x81, 0x05, 'H', 'e', 'l', 'l', 'o'})
	})
	t.Run("between fragments in one write", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		c.write(concat(
			clientFrame(fText, []byte("Hel")),
			clientFrame(finBit|fPing, []byte("p1")),
			clientFrame(finBit|fCont, []byte("lo"))))
		c.expectFrames(nil, pong("p1"), msg(fText, "Hello"))
	})
	t.Run("several pings in one write", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		// RFC 6455 section 5.5.3 lets a server answer only the latest
		// of the pings it has not answered yet.
		c.write(concat(
			clientFrame(fBinary, nil),
			clientFrame(finBit|fPing, []byte("a")),
			clientFrame(fCont, []byte{1, 2, 3}),
			clientFrame(finBit|fPong, []byte("unasked")),
			clientFrame(finBit|fPing, []byte("b")),
			clientFrame(finBit|fPing, []byte("c")),
			clientFrame(finBit|fCont, []byte{4, 5})))
		c.expectFrames([]frame{pong("a"), pong("b")}, pong("c"), frame{0x82, []byte{1, 2, 3, 4, 5}})
	})
	t.Run("a thousand pings in one write", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		var b []byte
		var optional []frame
		for i := range 1000 {
			b = append(b, clientFrame(finBit|fPing, fmt.Appendf(nil, "%d", i))...)
			optional = append(optional, pong(fmt.Sprint(i)))
		}
		c.write(b)
		c.expectFrames(optional[:999], pong("999"))
	})
	t.Run("empty and 125 bytes", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		c.write(clientFrame(finBit|fPing, nil))
		c.expect([]byte{0x8a, 0x00})
		c.write(clientFrame(finBit|fPing, text(125, 9)))
		c.expect(append([]byte{0x8a, 125}, text(125, 9)...))
	})
	t.Run("then close in one write", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		c := dial(t, srv.addr)
		c.write(concat(
			clientFrame(finBit|fPing, []byte("p")),
			clientFrame(finBit|fClose, closeBody(1000, ""))))
		// Once the close is read, the pong may be left out (section
		// 5.5.3: "unless it already received a Close frame").
		c.expectFrames([]frame{pong("p")}, frame{finBit | fClose, closeBody(1000, "")})
		c.expectEOF(false)
	})
}

func TestSlowClient(t *testing.T) {
	t.Parallel()
	send := concat(
		clientFrame(finBit|fText, []byte("hello")),
		clientFrame(fBinary, []byte("ab")),
		clientFrame(finBit|fPing, []byte("p")),
		clientFrame(finBit|fCont, []byte("cd")),
		clientFrame(finBit|fBinary, pattern(200, 1)))
	// The echoes come in order. The pong may come anywhere after them
	// begin: it goes out when the server has handled all it has read
	// (RFC 6455 section 5.5.3 lets it wait), and on a busy machine the
	// bytes after the ping can arrive together with it.
	want := [][]byte{
		serverFrame(finBit|fText, []byte("hello")),
		serverFrame(finBit|fBinary, []byte("abcd")),
		serverFrame(finBit|fBinary, pattern(200, 1)),
	}
	pong := serverFrame(finBit|fPong, []byte("p"))
	srv := startEcho(t, serverConfig{})
	c := dial(t, srv.addr)
	for i := range send {
		c.write(send[i : i+1])
		// The pause is the input under test, not a wait for a state: it
		// makes each byte its own segment, read by its own read.
		time.Sleep(200 * time.Microsecond)
	}
	pongs := 0
	for len(want) > 0 || pongs == 0 {
		f, err := c.readFrame()
		if err != nil {
			t.Fatalf("reading: %v (still expecting %d echoes, %d pongs seen)", err, len(want), pongs)
		}
		got := serverFrame(f.b0, f.payload)
		switch {
		case bytes.Equal(got, pong):
			pongs++
			if pongs > 1 {
				t.Fatalf("a second pong for one ping")
			}
		case len(want) > 0 && bytes.Equal(got, want[0]):
			want = want[1:]
		default:
			t.Fatalf("server sent %s, want the next echo (%d left) or the pong", short(got), len(want))
		}
	}
}

func TestFirstFrameWithTheRequest(t *testing.T) {
	t.Parallel()
	three := clientFrame(finBit|fText, []byte("three"))
	tests := []struct {
		name  string
		first []byte // sent in the request's write
		want  []byte
		later []byte // sent after the 101 response was read
		echo  []byte // the answer to later
	}{
		{"one small frame",
			clientFrame(finBit|fText, []byte("early")),
			serverFrame(finBit|fText, []byte("early")), nil, nil},
		{"two frames and half of a third", concat(
			clientFrame(finBit|fText, []byte("one")),
			clientFrame(finBit|fPing, []byte("two")),
			three[:4]),
			concat(serverFrame(finBit|fText, []byte("one")), serverFrame(finBit|fPong, []byte("two"))),
			three[4:], serverFrame(finBit|fText, []byte("three"))},
		{"a frame larger than the read buffer",
			clientFrame(finBit|fBinary, pattern(10000, 1)),
			serverFrame(finBit|fBinary, pattern(10000, 1)), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{})
			c := dialHTTP(t, srv.addr, http.MethodGet, headers(nil), tt.first)
			c.checkSwitched()
			c.expect(tt.want)
			if tt.later != nil {
				c.write(tt.later)
				c.expect(tt.echo)
			}
		})
	}
}

func TestCloseFromClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		send   []byte
		code   StatusCode // StatusNoStatusRcvd: an empty close payload
		reason string
	}{
		{"1000 with a reason", clientFrame(finBit|fClose, closeBody(1000, "bye")), 1000, "bye"},
		{"no payload", clientFrame(finBit|fClose, nil), StatusNoStatusRcvd, ""},
		{"1001", clientFrame(finBit|fClose, closeBody(1001, "")), 1001, ""},
		{"1003", clientFrame(finBit|fClose, closeBody(1003, "")), 1003, ""},
		{"1007", clientFrame(finBit|fClose, closeBody(1007, "")), 1007, ""},
		{"1010", clientFrame(finBit|fClose, closeBody(1010, "")), 1010, ""},
		{"1011", clientFrame(finBit|fClose, closeBody(1011, "")), 1011, ""},
		{"1014", clientFrame(finBit|fClose, closeBody(1014, "")), 1014, ""},
		{"3000", clientFrame(finBit|fClose, closeBody(3000, "app")), 3000, "app"},
		{"4999", clientFrame(finBit|fClose, closeBody(4999, "")), 4999, ""},
		{"reason of 123 bytes", clientFrame(finBit|fClose, closeBody(1000, string(text(123, 0)))), 1000, string(text(123, 0))},
		{"in the middle of a fragmented message", concat(
			clientFrame(fText, []byte("half")),
			clientFrame(finBit|fClose, closeBody(1000, "x"))), 1000, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{})
			c := dial(t, srv.addr)
			c.write(clientFrame(finBit|fText, []byte("before")))
			c.expect(serverFrame(finBit|fText, []byte("before")))
			c.write(tt.send)
			if tt.code == StatusNoStatusRcvd {
				c.expect([]byte{0x88, 0x00})
			} else {
				reason := c.expectClose(int(tt.code))
				if reason != "" && reason != tt.reason {
					t.Errorf("close answer's reason = %q, want none or the peer's %q", reason, tt.reason)
				}
			}
			c.expectEOF(false)
			checkEnd(t, srv.next(t), fmt.Sprintf("*CloseError{%d, %q}", tt.code, tt.reason),
				isCloseError(tt.code, tt.reason))
		})
	}
}

func TestCloseFromServer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100) // 200 bytes, cut in the middle of a character at 123
	tests := []struct {
		name       string
		code       StatusCode
		reason     string
		wantReason string
		late       bool // the client sends a message after the server's close
	}{
		{"going away", StatusGoingAway, "going away", "going away", false},
		{"reason cut to fit a control frame", StatusPolicyViolation, long, strings.Repeat("é", 61), false},
		{"messages after the close are dropped", StatusNormalClosure, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
				if err := c.Close(tt.code, tt.reason); err != nil {
					return fmt.Errorf("Close: %w", err)
				}
				if err := c.WriteMessage(MessageText, []byte("x")); !errors.Is(err, ErrClosed) {
					return fmt.Errorf("WriteMessage after Close = %v, want ErrClosed", err)
				}
				if err := c.Close(tt.code, tt.reason); err == nil {
					return errors.New("second Close returned no error")
				}
				return nil
			}})
			c := dial(t, srv.addr)
			reason := c.expectClose(int(tt.code))
			if reason != tt.wantReason {
				t.Errorf("close reason = %q (%d bytes), want %q", reason, len(reason), tt.wantReason)
			}
			if tt.late {
				c.write(clientFrame(finBit|fText, []byte("late")))
			}
			c.write(clientFrame(finBit|fClose, closeBody(int(tt.code), "")))
			c.expectEOF(false)
			o := srv.next(t)
			checkEnd(t, o, fmt.Sprintf("*CloseError{%d}", tt.code), isCloseError(tt.code, ""))
			if o.beside != nil {
				t.Error(o.beside)
			}
		})
	}
}

// TestCloseStatus checks CloseStatus on a wrapped CloseError and on
// another error.
func TestCloseStatus(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("session: %w", &CloseError{Code: 4001, Reason: "x"})
	if got := CloseStatus(err); got != 4001 {
		t.Errorf("CloseStatus(wrapped 4001) = %d, want 4001", got)
	}
	if got := CloseStatus(errors.New("other")); got != -1 {
		t.Errorf("CloseStatus(other) = %d, want -1", got)
	}
}

// CloseStatus returns the status code of a CloseError in err's chain, or
// -1 if there is none.
func CloseStatus(err error) StatusCode {
	var ce *CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

// echoes writes send, in one write, to an echo server configured by cfg,
// expects exactly want back, and then checks that the connection still
// echoes.
func echoes(t *testing.T, cfg serverConfig, send, want []byte) {
	t.Helper()
	srv := startEcho(t, cfg)
	c := dial(t, srv.addr)
	c.write(send)
	c.expect(want)
	c.write(clientFrame(finBit|fText, []byte("next")))
	c.expect(serverFrame(finBit|fText, []byte("next")))
}
