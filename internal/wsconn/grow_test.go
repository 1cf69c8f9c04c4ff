package wsconn

import (
	"bytes"
	"net"
	"testing"
)

// TestAssemblyStopsAtTheLimit joins a message of exactly the read limit
// from fragments that arrive a little at a time and checks the buffer it
// was assembled in never grew past the limit: a peer one byte short of
// the limit holds no more than the limit.
func TestAssemblyStopsAtTheLimit(t *testing.T) {
	// Above maxPooledMessage: whatever buffer the pool hands out, this
	// message has to grow it, so a capacity past the limit can only be
	// growth that overshot.
	const limit = 100_000
	if limit <= maxPooledMessage {
		t.Fatalf("limit %d must be above the largest pooled buffer, %d", limit, maxPooledMessage)
	}
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	c := newConn(server, "")
	c.SetReadLimit(limit)

	want := pattern(limit, 7)
	go func() {
		// Fragments of 1,000 bytes, each written in pieces so that
		// every read sees part of one.
		for i := 0; i < limit; i += 1000 {
			op := byte(fCont)
			if i == 0 {
				op = fBinary
			}
			if i+1000 == limit {
				op |= finBit
			}
			f := clientFrame(op, want[i:i+1000])
			for len(f) > 0 {
				n := min(len(f), 333)
				if _, err := client.Write(f[:n]); err != nil {
					return
				}
				f = f[n:]
			}
		}
	}()
	typ, got, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("ReadMessage: %v", err)
	}
	if typ != MessageBinary || !bytes.Equal(got, want) {
		t.Fatalf("got type %d, %d bytes; want the %d-byte binary message", typ, len(got), limit)
	}
	if c := cap(*c.msg); c > limit {
		t.Errorf("assembly buffer grew to %d bytes, past the %d-byte limit", c, limit)
	}
}
