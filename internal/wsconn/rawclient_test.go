package wsconn

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// ioTimeout bounds every read and write a test makes on a raw connection,
// so that a server that never answers fails the test instead of hanging it.
const ioTimeout = 10 * time.Second

// Frame header bits and opcodes (RFC 6455 section 5.2), spelled out here
// so that the tests do not lean on the names the implementation uses.
const (
	finBit  = 0x80
	rsv1Bit = 0x40
	rsv2Bit = 0x20
	rsv3Bit = 0x10

	fCont   = 0x0
	fText   = 0x1
	fBinary = 0x2
	fClose  = 0x8
	fPing   = 0x9
	fPong   = 0xA
)

// testKey is the Sec-WebSocket-Key of RFC 6455 section 1.3, whose accept
// value the RFC gives.
const (
	testKey       = "dGhlIHNhbXBsZSBub25jZQ=="
	testAcceptKey = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
)

// maskKey masks every frame the raw client sends. Its bytes differ, so a
// server that applies them at the wrong offset garbles the payload.
var maskKey = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// appendHeader appends a frame header with the payload length n in its
// shortest encoding, and the mask key when masked.
func appendHeader(b []byte, b0 byte, n int, masked bool) []byte {
	var mask byte
	if masked {
		mask = 0x80
	}
	switch {
	case n < 126:
		b = append(b, b0, mask|byte(n))
	case n <= 0xffff:
		b = append(b, b0, mask|126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, b0, mask|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if masked {
		b = append(b, maskKey[:]...)
	}
	return b
}

// clientFrame is a masked frame as a client sends it: b0 holds FIN, the
// reserved bits and the opcode.
func clientFrame(b0 byte, payload []byte) []byte {
	b := appendHeader(nil, b0, len(payload), true)
	for i, c := range payload {
		b = append(b, c^maskKey[i&3])
	}
	return b
}

// serverFrame is an unmasked frame, as a server sends it and as a broken
// client might.
func serverFrame(b0 byte, payload []byte) []byte {
	return append(appendHeader(nil, b0, len(payload), false), payload...)
}

// closeBody is a close frame's payload: a code and a reason.
func closeBody(code int, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...)
}

// concat joins frames into the bytes of one write.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// rawClient is a WebSocket client written by hand on a TCP connection,
// so that a test sends exactly the bytes it means to and sees exactly
// what the server sends back.
type rawClient struct {
	tb   testing.TB
	nc   net.Conn
	br   *bufio.Reader
	resp *http.Response
}

// upgradeHeaders are the header lines of a valid upgrade request, without
// Host.
var upgradeHeaders = []string{
	"Connection: Upgrade",
	"Upgrade: websocket",
	"Sec-WebSocket-Version: 13",
	"Sec-WebSocket-Key: " + testKey,
}

// headers returns upgradeHeaders without the lines whose names are in
// drop, followed by add.
func headers(drop []string, add ...string) []string {
	var out []string
	for _, line := range upgradeHeaders {
		name, _, _ := strings.Cut(line, ":")
		keep := true
		for _, d := range drop {
			if strings.EqualFold(name, d) {
				keep = false
			}
		}
		if keep {
			out = append(out, line)
		}
	}
	return append(out, add...)
}

// request is the text of an HTTP/1.1 request for "/" on host.
func request(method, host string, lines []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s / HTTP/1.1\r\nHost: %s\r\n", method, host)
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// dialHTTP connects to addr, sends the request with method and header
// lines, followed in the same write by first, and reads the response
// head. The connection is closed when the test ends.
func dialHTTP(tb testing.TB, addr, method string, lines []string, first []byte) *rawClient {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { _ = nc.Close() })
	c := &rawClient{tb: tb, nc: nc, br: bufio.NewReader(nc)}
	c.write(append(request(method, addr, lines), first...))
	_ = nc.SetReadDeadline(time.Now().Add(ioTimeout))
	req, _ := http.NewRequest(method, "http://"+addr+"/", nil)
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		tb.Fatalf("reading the handshake response: %v", err)
	}
	c.resp = resp
	return c
}

// dial opens a WebSocket connection to addr with a valid handshake plus
// extra header lines, failing the test unless the server switches
// protocols.
func dial(tb testing.TB, addr string, extra ...string) *rawClient {
	tb.Helper()
	c := dialHTTP(tb, addr, http.MethodGet, headers(nil, extra...), nil)
	c.checkSwitched()
	return c
}

// checkSwitched fails the test unless the response is a valid 101.
func (c *rawClient) checkSwitched() {
	c.tb.Helper()
	r := c.resp
	if r.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 512))
		c.tb.Fatalf("handshake status = %s (%q), want 101", r.Status, body)
	}
	if got := r.Header.Get("Sec-WebSocket-Accept"); got != testAcceptKey {
		c.tb.Errorf("Sec-WebSocket-Accept = %q, want %q", got, testAcceptKey)
	}
	if got := r.Header.Get("Upgrade"); !strings.EqualFold(got, "websocket") {
		c.tb.Errorf("Upgrade = %q, want websocket", got)
	}
	if got := r.Header.Get("Connection"); !strings.EqualFold(got, "upgrade") {
		c.tb.Errorf("Connection = %q, want Upgrade", got)
	}
}

// write sends b in one write.
func (c *rawClient) write(b []byte) {
	c.tb.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.tb.Fatalf("write %d bytes: %v", len(b), err)
	}
}

// expect reads len(want) bytes and fails the test unless they are want.
func (c *rawClient) expect(want []byte) {
	c.tb.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	got := make([]byte, len(want))
	if n, err := io.ReadFull(c.br, got); err != nil {
		c.tb.Fatalf("read %d of %d expected bytes (%s): %v", n, len(want), short(want), err)
	}
	if !bytes.Equal(got, want) {
		c.tb.Fatalf("server sent %s, want %s", short(got), short(want))
	}
}

// short shows the start of a byte string in hexadecimal.
func short(b []byte) string {
	if len(b) > 24 {
		return fmt.Sprintf("% x ... (%d bytes)", b[:24], len(b))
	}
	return fmt.Sprintf("% x", b)
}

// frame is one frame the server sent.
type frame struct {
	b0      byte // FIN, reserved bits, opcode
	payload []byte
}

// readFrame reads one server frame, failing the test if the server masked
// it or did not encode its length in the fewest bytes (RFC 6455
// section 5.2).
func (c *rawClient) readFrame() (frame, error) {
	c.tb.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return frame{}, err
	}
	if h[1]&0x80 != 0 {
		c.tb.Fatalf("server frame % x is masked", h)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(c.br, ext[:]); err != nil {
			return frame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
		if n < 126 {
			c.tb.Fatalf("server frame length %d in 16 bits", n)
		}
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(c.br, ext[:]); err != nil {
			return frame{}, err
		}
		n = binary.BigEndian.Uint64(ext[:])
		if n <= 0xffff {
			c.tb.Fatalf("server frame length %d in 64 bits", n)
		}
	}
	if n > 1<<24 {
		c.tb.Fatalf("server frame length %d", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c.br, p); err != nil {
		return frame{}, err
	}
	return frame{h[0], p}, nil
}

// expectClose reads the next frame and fails the test unless it is a
// final, well-formed close frame with code; it returns the reason.
func (c *rawClient) expectClose(code int) string {
	c.tb.Helper()
	f, err := c.readFrame()
	if err != nil {
		c.tb.Fatalf("reading a close frame with code %d: %v", code, err)
	}
	if f.b0 != finBit|fClose {
		c.tb.Fatalf("server frame %#x %s, want a close frame with code %d", f.b0, short(f.payload), code)
	}
	if len(f.payload) < 2 {
		c.tb.Fatalf("close payload %s, want code %d", short(f.payload), code)
	}
	if got := int(binary.BigEndian.Uint16(f.payload)); got != code {
		c.tb.Fatalf("close code = %d (reason %q), want %d", got, f.payload[2:], code)
	}
	reason := f.payload[2:]
	if !utf8.Valid(reason) {
		c.tb.Errorf("close reason %q is not UTF-8", reason)
	}
	return string(reason)
}

// expectEOF fails the test unless the server closes the TCP connection
// with nothing more sent. A reset counts as closed when reset is true: a
// server that closes with our close frame still unread in its buffer
// makes the kernel answer with a reset.
func (c *rawClient) expectEOF(reset bool) {
	c.tb.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var b [64]byte
	n, err := c.br.Read(b[:])
	switch {
	case n > 0:
		c.tb.Fatalf("server sent %s, want the end of the connection", short(b[:n]))
	case errors.Is(err, io.EOF):
	case reset && errors.Is(err, syscall.ECONNRESET):
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.tb.Fatalf("server left the TCP connection open for %v", ioTimeout)
	default:
		c.tb.Fatalf("read after close: %v, want EOF", err)
	}
}

// expectFrames reads frames until it has seen every frame of want, in any
// order, failing the test on any other frame. Frames of optional may come
// too, each at most once and in their order.
func (c *rawClient) expectFrames(optional []frame, want ...frame) {
	c.tb.Helper()
	seen := make([]bool, len(want))
	left := len(want)
	next := 0 // the first optional frame that may still come
	for left > 0 {
		f, err := c.readFrame()
		if err != nil {
			c.tb.Fatalf("reading %d more frames: %v", left, err)
		}
		matched := false
		for i, w := range want {
			if !seen[i] && f.b0 == w.b0 && bytes.Equal(f.payload, w.payload) {
				seen[i], matched = true, true
				left--
				break
			}
		}
		for i := next; !matched && i < len(optional); i++ {
			if f.b0 == optional[i].b0 && bytes.Equal(f.payload, optional[i].payload) {
				next, matched = i+1, true
			}
		}
		if !matched {
			c.tb.Fatalf("unexpected frame %#x %s", f.b0, short(f.payload))
		}
	}
}
