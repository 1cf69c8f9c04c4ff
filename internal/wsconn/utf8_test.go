package wsconn

import (
	"errors"
	"strings"
	"testing"
)

func isInvalidUTF8(err error) bool { return errors.Is(err, ErrInvalidUTF8) }

// TestInvalidUTF8 sends text that is not UTF-8 and checks the server
// closes with 1007 having been sent only what is in send: each case stops
// right after the first byte that can no longer be UTF-8, so a close that
// waited for the message's end, or for the rest of a frame, never comes.
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	big := append([]byte("\xff"), text(9999, 1)...)
	bigFrame := clientFrame(finBit|fText, big)
	tests := []struct {
		name string
		send []byte // never what would complete the message
		echo []byte // what the server sends before its close frame
	}{
		{"one frame", clientFrame(finBit|fText, []byte("ok\xff")), nil},
		{"one frame ending inside a character", clientFrame(finBit|fText, []byte("ab\xe2\x82")), nil},
		{"first fragment", clientFrame(fText, []byte("ab\xffcd")), nil},
		{"a surrogate's start ending a fragment", clientFrame(fText, []byte("ab\xed\xa0")), nil},
		{"a byte that starts no character ending a fragment", clientFrame(fText, []byte("ab\xc0")), nil},
		{"a continuation that breaks a character", concat(
			clientFrame(fText, []byte("ab\xe2\x82")),
			clientFrame(fCont, []byte("c"))), nil},
		{"the last fragment ending inside a character", concat(
			clientFrame(fText, []byte("ab")),
			clientFrame(finBit|fCont, []byte("\xf0\x9f\x98"))), nil},
		{"the start of a frame larger than the read buffer", bigFrame[:4+4+100], nil},
		{"after a message that was UTF-8", concat(
			clientFrame(finBit|fText, []byte("café")),
			clientFrame(finBit|fText, []byte("\x80"))),
			serverFrame(finBit|fText, []byte("café"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startEcho(t, serverConfig{})
			c := dial(t, srv.addr)
			c.write(tt.send)
			c.expect(tt.echo)
			c.expectClose(1007)
			_, _ = c.nc.Write(clientFrame(finBit|fClose, closeBody(1007, "")))
			c.expectEOF(true)
			_ = c.nc.Close()
			checkEnd(t, srv.next(t), "ErrInvalidUTF8", isInvalidUTF8)
		})
	}
}

// TestInvalidUTF8BeforeTheNextFragment: the close for a first fragment
// that is not UTF-8 arrives while the client has sent nothing more, and
// the fragment the client sends after it is not taken as part of a
// message.
func TestInvalidUTF8BeforeTheNextFragment(t *testing.T) {
	t.Parallel()
	srv := startEcho(t, serverConfig{})
	c := dial(t, srv.addr)
	c.write(clientFrame(fText, []byte("caf\xe9 ")))
	c.expectClose(1007)
	_, _ = c.nc.Write(concat(
		clientFrame(finBit|fCont, []byte("au lait")),
		clientFrame(finBit|fClose, closeBody(1007, ""))))
	c.expectEOF(true)
	_ = c.nc.Close()
	checkEnd(t, srv.next(t), "ErrInvalidUTF8", isInvalidUTF8)
}

// TestUTF8AcrossFragments: characters cut between fragments, with control
// frames and empty fragments between their bytes and across read
// buffers, make a valid text message.
func TestUTF8AcrossFragments(t *testing.T) {
	t.Parallel()
	euros := []byte(strings.Repeat("€", 3000)) // 9,000 bytes, three to a character
	tests := []struct {
		name string
		send []byte
		want []byte // exactly what the server sends back
	}{
		{"two bytes cut after the first", concat(
			clientFrame(fText, []byte("caf\xc3")),
			clientFrame(finBit|fCont, []byte("\xa9"))),
			serverFrame(finBit|fText, []byte("café"))},
		{"four bytes over three fragments and a pong", concat(
			clientFrame(fText, []byte("\xf0\x9f")),
			clientFrame(finBit|fPong, []byte("p")),
			clientFrame(fCont, []byte("\x98")),
			clientFrame(fCont, nil),
			clientFrame(finBit|fCont, []byte("\x80!"))),
			serverFrame(finBit|fText, []byte("😀!"))},
		{"fragments larger than the read buffer, each cut inside a character", concat(
			clientFrame(fText, euros[:2999]),
			clientFrame(fCont, euros[2999:6000]),
			clientFrame(finBit|fCont, euros[6000:])),
			serverFrame(finBit|fText, euros)},
		{"one frame larger than the read buffer", clientFrame(finBit|fText, euros),
			serverFrame(finBit|fText, euros)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			echoes(t, serverConfig{}, tt.send, tt.want)
		})
	}
}

// TestValidPrefix checks the split between whole characters and a cut
// one, or an invalid byte.
func TestValidPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		n      int
		cutOff bool // the rest is a character cut short
	}{
		{"", 0, true},
		{"abc", 3, true},
		{"é", 2, true},
		{"a\xc3", 1, true},
		{"a\xe2\x82", 1, true},
		{"a\xf0\x9f\x98", 1, true},
		{"a\xff", 1, false},
		{"a\xc0", 1, false},           // overlong: no character starts with C0
		{"a\xed\xa0", 1, false},       // a surrogate
		{"a\xf4\x90", 1, false},       // past U+10FFFF
		{"a\xe2\x82b", 1, false},      // cut, then something else
		{"\xe2\x82\xac\xe2", 3, true}, // one whole, one cut
		{"ab\xf0\x9f\x98\x80\x80", 6, false},
	}
	for _, tt := range tests {
		n, ok := validPrefix([]byte(tt.in))
		if n != tt.n || ok != tt.cutOff {
			t.Errorf("validPrefix(%q) = %d, %v; want %d, %v", tt.in, n, ok, tt.n, tt.cutOff)
		}
	}
}
