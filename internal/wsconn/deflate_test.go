package wsconn

import (
	"bytes"
	"compress/flate"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// deflateRef compresses p as RFC 7692 section 7.2.1 describes, with
// compress/flate directly: an independent encoder for the tests.
func deflateRef(t testing.TB, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	if !bytes.HasSuffix(out, []byte{0, 0, 0xff, 0xff}) {
		t.Fatalf("sync flush ends % x", out[max(0, len(out)-4):])
	}
	return out[:len(out)-4]
}

// inflateRef decompresses one permessage-deflate message with
// compress/flate directly.
func inflateRef(t testing.TB, p []byte) []byte {
	t.Helper()
	r := flate.NewReader(io.MultiReader(bytes.NewReader(p), bytes.NewReader([]byte{0, 0, 0xff, 0xff})))
	out, err := io.ReadAll(r)
	if err != nil && err != io.ErrUnexpectedEOF {
		t.Fatalf("inflating % x: %v", short(p), err)
	}
	return out
}

// TestNegotiateDeflate walks RFC 7692's negotiation: the first acceptable
// offer wins; an offer with an unknown or repeated parameter, or an
// invalid value, is declined and the next one considered; a limit on the
// server's window below 15 bits is declined (compress/flate always uses
// 32 KiB); the answer always asks the client not to take context over.
func TestNegotiateDeflate(t *testing.T) {
	t.Parallel()
	const base = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
	tests := []struct {
		name   string
		offers []string // Sec-WebSocket-Extensions values
		want   string   // the answer; "" declines
	}{
		{"none", nil, ""},
		{"plain", []string{"permessage-deflate"}, base},
		{"Chromium's", []string{"permessage-deflate; client_max_window_bits"}, base},
		{"Firefox's", []string{"permessage-deflate"}, base},
		{"client window bits value", []string{"permessage-deflate; client_max_window_bits=10"}, base + "; client_max_window_bits=10"},
		{"client window bits quoted", []string{`permessage-deflate; client_max_window_bits="12"`}, base + "; client_max_window_bits=12"},
		{"both no context takeover", []string{"permessage-deflate; server_no_context_takeover; client_no_context_takeover"}, base},
		{"server asked not to take over", []string{"permessage-deflate; server_no_context_takeover"}, base},
		{"server window 15", []string{"permessage-deflate; server_max_window_bits=15"}, base},
		{"case of names", []string{"Permessage-Deflate; Client_Max_Window_Bits"}, base},
		{"another extension first", []string{"x-webkit-deflate-frame, permessage-deflate"}, base},
		{"in a second header", []string{"foo", "permessage-deflate"}, base},
		{"server window 10 declined", []string{"permessage-deflate; server_max_window_bits=10"}, ""},
		{"server window 10, then plain", []string{"permessage-deflate; server_max_window_bits=10, permessage-deflate"}, base},
		{"server window without value", []string{"permessage-deflate; server_max_window_bits"}, ""},
		{"client window 7", []string{"permessage-deflate; client_max_window_bits=7"}, ""},
		{"client window 16", []string{"permessage-deflate; client_max_window_bits=16"}, ""},
		{"client window 08", []string{"permessage-deflate; client_max_window_bits=08"}, ""},
		{"client window not a number", []string{"permessage-deflate; client_max_window_bits=ten"}, ""},
		{"duplicate parameter", []string{"permessage-deflate; client_no_context_takeover; client_no_context_takeover"}, ""},
		{"unknown parameter", []string{"permessage-deflate; mystery"}, ""},
		{"value on a flag", []string{"permessage-deflate; server_no_context_takeover=1"}, ""},
		{"value on the name", []string{"permessage-deflate=1"}, ""},
		{"malformed", []string{`permessage-deflate; client_max_window_bits="1`}, ""},
		{"unknown, then valid", []string{"permessage-deflate; mystery, permessage-deflate; client_max_window_bits"}, base},
		{"only another extension", []string{"x-webkit-deflate-frame"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, v := range tt.offers {
				h.Add("Sec-WebSocket-Extensions", v)
			}
			p, ok := negotiateDeflate(h)
			got := ""
			if ok {
				got = deflateResponse(p, false)
			}
			if got != tt.want {
				t.Errorf("offers %q: answer %q, want %q", tt.offers, got, tt.want)
			}
		})
	}
}

// TestNegotiateTakeover: with ContextTakeover the answer leaves out
// server_no_context_takeover, unless the client's offer forbade it.
func TestNegotiateTakeover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ offer, want string }{
		{"permessage-deflate", "permessage-deflate; client_no_context_takeover"},
		{"permessage-deflate; server_no_context_takeover", "permessage-deflate; server_no_context_takeover; client_no_context_takeover"},
	} {
		h := http.Header{"Sec-Websocket-Extensions": {tc.offer}}
		p, ok := negotiateDeflate(h)
		if got := deflateResponse(p, true); !ok || got != tc.want {
			t.Errorf("offer %q with takeover: answer %q (%v), want %q", tc.offer, got, ok, tc.want)
		}
	}
}

// deflateServer is an echo server that accepts permessage-deflate.
func deflateServer(t *testing.T, o CompressionOptions, limit int) *echoServer {
	t.Helper()
	return startEcho(t, serverConfig{opts: &AcceptOptions{Compression: &o}, limit: limit})
}

// TestDeflateCoderClient runs compressed messages both ways with
// coder/websocket's client, with and without context takeover on its
// side: the server's answers decompress to what was sent.
func TestDeflateCoderClient(t *testing.T) {
	t.Parallel()
	for _, mode := range []websocket.CompressionMode{websocket.CompressionNoContextTakeover, websocket.CompressionContextTakeover} {
		for _, takeover := range []bool{false, true} {
			t.Run(fmtMode(mode, takeover), func(t *testing.T) {
				t.Parallel()
				srv := deflateServer(t, CompressionOptions{ContextTakeover: takeover, MinSize: 64}, 1<<20)
				ctx, cancel := contextWithTimeout()
				defer cancel()
				ws, resp, err := websocket.Dial(ctx, "ws://"+srv.addr, &websocket.DialOptions{CompressionMode: mode})
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				defer ws.CloseNow()
				ws.SetReadLimit(1 << 20)
				if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
					t.Fatalf("Sec-WebSocket-Extensions = %q, want permessage-deflate", ext)
				}
				chat := bytes.Repeat([]byte(`{"from":"alice","text":"hello bob, how is the game going?"}`), 8)
				msgs := []struct {
					typ websocket.MessageType
					p   []byte
				}{
					{websocket.MessageText, []byte("short")},
					{websocket.MessageText, chat},
					{websocket.MessageText, chat},
					{websocket.MessageText, text(70<<10, 3)},
					{websocket.MessageBinary, pattern(5000, 4)},
					{websocket.MessageBinary, nil},
				}
				for i, m := range msgs {
					if err := ws.Write(ctx, m.typ, m.p); err != nil {
						t.Fatalf("Write %d: %v", i, err)
					}
					gotTyp, got, err := ws.Read(ctx)
					if err != nil {
						t.Fatalf("Read %d: %v", i, err)
					}
					if gotTyp != m.typ || !bytes.Equal(got, m.p) {
						t.Errorf("echo %d: %v %s, want %v %s", i, gotTyp, short(got), m.typ, short(m.p))
					}
				}
				if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
					t.Errorf("Close: %v", err)
				}
				if o := srv.next(t); CloseStatus(o.end) != StatusNormalClosure {
					t.Errorf("server's echo loop ended with %v, want the client's 1000", o.end)
				}
			})
		}
	}
}

func fmtMode(m websocket.CompressionMode, takeover bool) string {
	s := "client no context takeover"
	if m == websocket.CompressionContextTakeover {
		s = "client context takeover"
	}
	if takeover {
		return s + ", server takeover"
	}
	return s + ", server per message"
}

// TestDeflateWire checks the frames themselves with the raw client: a
// message at or over MinSize goes out with RSV1 and inflates to the
// message, a shorter one goes out plain; a fragmented compressed message
// (RSV1 on its first frame only) and an empty one are read.
func TestDeflateWire(t *testing.T) {
	t.Parallel()
	srv := deflateServer(t, CompressionOptions{MinSize: 100}, 1<<20)
	c := dial(t, srv.addr, "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits")
	if got := c.resp.Header.Get("Sec-WebSocket-Extensions"); got != "permessage-deflate; server_no_context_takeover; client_no_context_takeover" {
		t.Fatalf("Sec-WebSocket-Extensions = %q", got)
	}
	long := bytes.Repeat([]byte("MESSAGE\ndestination:/topic/chat.lobby\n\nhello\x00"), 20)

	// A compressed message, one frame.
	c.write(clientFrame(finBit|rsv1Bit|fText, deflateRef(t, long)))
	f, err := c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if f.b0 != finBit|rsv1Bit|fText {
		t.Fatalf("echo of %d bytes: first byte %#x, want FIN|RSV1|text", len(long), f.b0)
	}
	if got := inflateRef(t, f.payload); !bytes.Equal(got, long) {
		t.Errorf("echo inflates to %s, want %s", short(got), short(long))
	}
	if len(f.payload)*3 > len(long) {
		t.Errorf("echo of %d repetitive bytes is %d compressed, want at least 3x smaller", len(long), len(f.payload))
	}

	// A short message, compressed by the client, comes back plain.
	c.write(clientFrame(finBit|rsv1Bit|fBinary, deflateRef(t, []byte("tiny"))))
	c.expect(serverFrame(finBit|fBinary, []byte("tiny")))

	// Fragmented: RSV1 on the first frame only.
	z := deflateRef(t, long)
	c.write(concat(
		clientFrame(rsv1Bit|fText, z[:10]),
		clientFrame(fCont, z[10:20]),
		clientFrame(finBit|fCont, z[20:])))
	f, err = c.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	if got := inflateRef(t, f.payload); f.b0 != finBit|rsv1Bit|fText || !bytes.Equal(got, long) {
		t.Errorf("echo of a fragmented compressed message: %#x %s", f.b0, short(got))
	}

	// An empty compressed message: a single 0x00 byte (RFC 7692 7.2.3.6).
	c.write(clientFrame(finBit|rsv1Bit|fText, []byte{0x00}))
	c.expect(serverFrame(finBit|fText, nil))

	// A message ending with a final block instead of a sync flush.
	c.write(clientFrame(finBit|rsv1Bit|fText, finalBlockOf("final block")))
	c.expect(serverFrame(finBit|fText, []byte("final block")))
}

// TestDeflateProtocolErrors: with permessage-deflate negotiated, RSV1
// on a continuation or a control frame, and RSV2 or RSV3 anywhere, fail
// the connection with 1002; data that is not deflate, and a text message
// that inflates to bytes that are not UTF-8, with 1007; a message that
// inflates past the read limit with 1009, however small on the wire.
func TestDeflateProtocolErrors(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	bomb := deflateRef(t, make([]byte, 50<<20)) // 50 MiB of zeros
	tests := []struct {
		name string
		send []byte
		code int
	}{
		{"rsv1 on a continuation", concat(
			clientFrame(rsv1Bit|fText, deflateRef(t, []byte("a"))[:1]),
			clientFrame(finBit|rsv1Bit|fCont, []byte("b"))), 1002},
		{"rsv1 on a ping", clientFrame(finBit|rsv1Bit|fPing, nil), 1002},
		{"rsv1 on a close", clientFrame(finBit|rsv1Bit|fClose, closeBody(1000, "")), 1002},
		{"rsv2", clientFrame(finBit|rsv2Bit|fText, []byte("hi")), 1002},
		{"rsv1 and rsv3", clientFrame(finBit|rsv1Bit|rsv3Bit|fBinary, deflateRef(t, []byte("hi"))), 1002},
		{"not deflate", clientFrame(finBit|rsv1Bit|fBinary, []byte{0xff, 0xff, 0xff, 0xff, 0xff}), 1007},
		{"text not UTF-8", clientFrame(finBit|rsv1Bit|fText, deflateRef(t, []byte("ok \xff\xfe"))), 1007},
		{"text ending inside a character", clientFrame(finBit|rsv1Bit|fText, deflateRef(t, []byte("euro \xe2\x82"))), 1007},
		{"bytes after a final block", clientFrame(finBit|rsv1Bit|fText, append(finalBlockOf("x"), 0x01, 0x02)), 1007},
		{"bomb", clientFrame(finBit|rsv1Bit|fBinary, bomb), 1009},
		{"just over the limit", clientFrame(finBit|rsv1Bit|fBinary, deflateRef(t, pattern(limit+1, 5))), 1009},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := deflateServer(t, CompressionOptions{}, limit)
			c := dial(t, srv.addr, "Sec-WebSocket-Extensions: permessage-deflate")
			c.write(tt.send)
			c.expectClose(tt.code)
			_, _ = c.nc.Write(clientFrame(finBit|fClose, closeBody(tt.code, "")))
			c.expectEOF(true)
			_ = c.nc.Close()
			srv.next(t)
		})
	}
	if len(bomb) > 64<<10 {
		t.Errorf("the bomb is %d bytes on the wire; it should fit in one read limit", len(bomb))
	}
}

// TestInflateBound: a bomb inflates into no more than the limit plus one
// byte, however much it would make.
func TestInflateBound(t *testing.T) {
	t.Parallel()
	bomb := deflateRef(t, make([]byte, 50<<20))
	for _, limit := range []int{1, 100, 4 << 10, 64 << 10, 1 << 20} {
		out := new([]byte)
		err := inflate(out, bomb, limit)
		if err != ErrMessageTooBig {
			t.Errorf("limit %d: inflate = %v, want ErrMessageTooBig", limit, err)
		}
		if cap(*out) > limit+1 || len(*out) > limit+1 {
			t.Errorf("limit %d: inflated into len %d cap %d, want at most %d", limit, len(*out), cap(*out), limit+1)
		}
	}
	// At the limit exactly, it is whole.
	p := pattern(4<<10, 9)
	out := new([]byte)
	if err := inflate(out, deflateRef(t, p), len(p)); err != nil || !bytes.Equal(*out, p) {
		t.Errorf("inflate at the limit: %v, %s", err, short(*out))
	}
}

// TestAppendDeflated: the shared encoding inflates to the message with
// an independent decoder, at every level, for empty and large messages,
// and appends after what dst held.
func TestAppendDeflated(t *testing.T) {
	t.Parallel()
	for _, level := range []int{0, 1, 5, 9, 42} {
		for _, p := range [][]byte{nil, []byte("x"), text(300, 1), pattern(100<<10, 2)} {
			dst := []byte("head")
			out := AppendDeflated(dst, p, level)
			if !bytes.HasPrefix(out, []byte("head")) {
				t.Fatalf("level %d: dst's bytes lost", level)
			}
			if got := inflateRef(t, out[4:]); !bytes.Equal(got, p) {
				t.Errorf("level %d, %d bytes: inflates to %s", level, len(p), short(got))
			}
		}
	}
}

// TestAppendStored: stored blocks followed by a shared compressed part
// inflate, with an independent decoder and with inflate, to both parts
// joined, for heads from empty to past one stored block's 65,535 bytes.
func TestAppendStored(t *testing.T) {
	t.Parallel()
	tail := AppendDeflated(nil, text(2000, 5), DefaultCompressionLevel)
	for _, n := range []int{0, 1, 30, 0xffff, 0xffff + 1, 150000} {
		head := pattern(n, 6)
		msg := AppendStored(nil, head)
		msg = append(msg, tail...)
		want := append(append([]byte(nil), head...), text(2000, 5)...)
		if got := inflateRef(t, msg); !bytes.Equal(got, want) {
			t.Errorf("head of %d: reference inflates to %d bytes %s", n, len(got), short(got))
		}
		out := new([]byte)
		if err := inflate(out, msg, 1<<20); err != nil || !bytes.Equal(*out, want) {
			t.Errorf("head of %d: inflate = %v, %d bytes", n, err, len(*out))
		}
	}
}

// TestSharedDeflated: one AppendDeflated encoding written to a connection
// that negotiated permessage-deflate without context takeover arrives as
// the message; a connection with context takeover, or none, refuses it.
func TestSharedDeflated(t *testing.T) {
	t.Parallel()
	msg := text(1000, 7)
	shared := AppendDeflated(make([]byte, MaxHeaderLen), msg, DefaultCompressionLevel)
	for _, tc := range []struct {
		name   string
		opts   *CompressionOptions
		offer  bool
		shares bool
	}{
		{"per message", &CompressionOptions{}, true, true},
		{"context takeover", &CompressionOptions{ContextTakeover: true}, true, false},
		{"not offered", &CompressionOptions{}, false, false},
		{"off", nil, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ready := make(chan error, 1)
			srv := startEcho(t, serverConfig{opts: &AcceptOptions{Compression: tc.opts}, setup: func(c *Conn) {
				if c.SharesDeflated() != tc.shares {
					ready <- errFmt("SharesDeflated = %v, want %v", c.SharesDeflated(), tc.shares)
					return
				}
				buf := append([]byte(nil), shared...)
				err := c.WriteDeflatedReserved(MessageText, buf)
				if tc.shares != (err == nil) {
					ready <- errFmt("WriteDeflatedReserved = %v", err)
					return
				}
				ready <- nil
			}})
			var extra []string
			if tc.offer {
				extra = append(extra, "Sec-WebSocket-Extensions: permessage-deflate")
			}
			c := dial(t, srv.addr, extra...)
			if err := <-ready; err != nil {
				t.Fatal(err)
			}
			if tc.shares {
				f, err := c.readFrame()
				if err != nil {
					t.Fatal(err)
				}
				if f.b0 != finBit|rsv1Bit|fText || !bytes.Equal(inflateRef(t, f.payload), msg) {
					t.Errorf("shared frame %#x inflates to %s", f.b0, short(inflateRef(t, f.payload)))
				}
			}
			c.write(clientFrame(finBit|fClose, closeBody(1000, "")))
			c.expectClose(1000)
			srv.next(t)
		})
	}
}

// contextWithTimeout bounds a test's client calls by ioTimeout.
func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), ioTimeout)
}

// errFmt is fmt.Errorf, named for the tests' messages.
func errFmt(format string, args ...any) error { return fmt.Errorf(format, args...) }
