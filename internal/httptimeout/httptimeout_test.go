package httptimeout

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// serve serves hs on a loopback listener wrapped by Count and returns its
// address and the kinds reported.
func serve(t *testing.T, hs *http.Server) (string, <-chan Kind) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kinds := make(chan Kind, 4)
	wl := Count(ln, hs, func(k Kind) { kinds <- k })
	go func() { _ = hs.Serve(wl) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String(), kinds
}

// waitClosed reads c until the server closes it.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("waiting for the server to close: %v", err)
	}
}

func TestCount(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	for _, tt := range []struct {
		name string
		send func(t *testing.T, c net.Conn) // what the client does before it goes quiet
		want Kind
	}{
		{"headers trickle", func(t *testing.T, c net.Conn) {
			_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
		}, Read},
		{"keep-alive idle", func(t *testing.T, c net.Conn) {
			_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
				t.Fatalf("ReadResponse: %v", err)
			}
		}, Idle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr, kinds := serve(t, &http.Server{Handler: ok, ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tt.send(t, c)
			waitClosed(t, c)
			select {
			case k := <-kinds:
				if k != tt.want {
					t.Errorf("timedOut(%v), want %v", k, tt.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no timeout reported, want %v", tt.want)
			}
		})
	}
}

// A connection the client closes is no timeout.
func TestCountClientClose(t *testing.T) {
	t.Parallel()
	hs := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Minute}
	addr, kinds := serve(t, hs)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	waitClosed(t, c)
	_ = c.Close()
	select {
	case k := <-kinds:
		t.Errorf("timedOut(%v) for a connection closed after its request", k)
	case <-time.After(200 * time.Millisecond):
	}
}
