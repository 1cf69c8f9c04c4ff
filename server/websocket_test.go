package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
)

// tcpSession is a WebSocket client written by hand on TCP, for frames no
// WebSocket library sends: unmasked, with reserved bits, ping floods.
type tcpSession struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialTCP(t *testing.T, wsURL string) *tcpSession {
	t.Helper()
	s, _ := dialTCPWith(t, wsURL, "")
	return s
}

// dialTCPWith is dialTCP with extra request header lines (each ending
// in CRLF); it returns the 101 response too.
func dialTCPWith(t *testing.T, wsURL, extra string) (*tcpSession, *http.Response) {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	req := "GET " + u.Path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v12.stomp\r\n" + extra + "\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	s := &tcpSession{t: t, nc: nc, br: bufio.NewReader(nc)}
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s, want 101", resp.Status)
	}
	return s, resp
}

// maskedFrame is a client frame: b0 is FIN, the reserved bits and the opcode.
func maskedFrame(b0 byte, p []byte) []byte {
	key := [4]byte{1, 2, 3, 4}
	b := []byte{b0}
	switch {
	case len(p) < 126:
		b = append(b, 0x80|byte(len(p)))
	default:
		b = append(b, 0x80|126)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	}
	b = append(b, key[:]...)
	for i, c := range p {
		b = append(b, c^key[i&3])
	}
	return b
}

// next reads one server frame: its opcode and payload.
func (s *tcpSession) next() (byte, []byte) {
	s.t.Helper()
	b0, p := s.nextFrame()
	return b0 & 0x0f, p
}

// nextFrame reads one server frame: its first byte (FIN, the reserved
// bits, the opcode) and payload.
func (s *tcpSession) nextFrame() (byte, []byte) {
	s.t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(s.br, h[:]); err != nil {
		s.t.Fatalf("reading a frame header: %v", err)
	}
	if h[1]&0x80 != 0 {
		s.t.Fatal("the server masked a frame")
	}
	n := int(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		_, _ = io.ReadFull(s.br, l[:])
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, _ = io.ReadFull(s.br, l[:])
		n = int(binary.BigEndian.Uint64(l[:]))
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(s.br, p); err != nil {
		s.t.Fatalf("reading a %d-byte payload: %v", n, err)
	}
	return h[0], p
}

// TestWebSocketViolationCloses sends frames that break RFC 6455 and
// checks each is closed with 1002, counted as the websocket kind, with no
// STOMP ERROR frame in front of the close.
func TestWebSocketViolationCloses(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bytes []byte
	}{
		{"unmasked", []byte{0x81, 0x02, 'h', 'i'}},
		{"reserved bit", maskedFrame(0x81|0x40, []byte("CONNECT\n\n\x00"))},
		{"reserved opcode", maskedFrame(0x83, []byte("x"))},
		{"oversize ping", maskedFrame(0x89, bytes.Repeat([]byte("p"), 126))},
		{"continuation first", maskedFrame(0x80, []byte("x"))},
		{"close code 1005 on the wire", maskedFrame(0x88, []byte{0x03, 0xed})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, Config{})
			s := dialTCP(t, ts.url)
			if _, err := s.nc.Write(tt.bytes); err != nil {
				t.Fatal(err)
			}
			op, p := s.next()
			if op != 0x8 {
				t.Fatalf("first frame: opcode %#x %q, want the close", op, p)
			}
			if code := int(binary.BigEndian.Uint16(p)); code != 1002 {
				t.Errorf("close code %d (%q), want 1002", code, p[2:])
			}
			// A peer that has failed the connection goes away; the server
			// then need not wait out its close timeout.
			_ = s.nc.Close()
			poll.Until(t, 10*time.Second, func() error {
				if n := ts.obs.closedCount(outcome.CloseProtocolError); n != 1 {
					return fmt.Errorf("%d sessions closed as protocol errors, want 1", n)
				}
				return nil
			})
			ts.obs.mu.Lock()
			n := ts.obs.protocol[outcome.KindWebSocket]
			ts.obs.mu.Unlock()
			if n != 1 {
				t.Errorf("protocol errors of kind %s = %d, want 1", outcome.KindWebSocket, n)
			}
		})
	}
}

// TestPingFloodGetsFewPongs packs a thousand pings into one write: the
// server answers the latest one it has read each time it runs out of
// input (RFC 6455 section 5.5.3), so the peer gets a handful of pongs, the
// last echoing the last ping, rather than a thousand writes.
func TestPingFloodGetsFewPongs(t *testing.T) {
	ts := startServer(t, Config{})
	s := dialTCP(t, ts.url)
	const pings = 1000
	var burst []byte
	for i := range pings {
		burst = append(burst, maskedFrame(0x89, binary.BigEndian.AppendUint32(nil, uint32(i)))...)
	}
	burst = append(burst, maskedFrame(0x81, []byte("CONNECT\naccept-version:1.2\nhost:h\n\n\x00"))...)
	if _, err := s.nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	pongs, last := 0, -1
	for connected := false; !connected || last != pings-1; {
		op, p := s.next()
		switch op {
		case 0xA:
			pongs++
			last = int(binary.BigEndian.Uint32(p))
		case 0x1:
			connected = connected || bytes.HasPrefix(p, []byte("CONNECTED"))
		}
	}
	if pongs > 100 {
		t.Errorf("%d pongs for %d pings in one write, want a handful", pongs, pings)
	}
	t.Logf("%d pongs for %d pings", pongs, pings)
}
