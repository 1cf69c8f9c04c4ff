package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/stompframe"
)

// testServer is a Server behind an httptest listener.
type testServer struct {
	*Server
	url string
	obs *countingObserver
}

func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	obs := &countingObserver{closed: map[string]int{}, protocol: map[string]int{}}
	if cfg.Observer == nil {
		cfg.Observer = obs
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
	})
	return &testServer{Server: srv, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", obs: obs}
}

// rawClient speaks STOMP by hand, for the cases a well-behaved client
// library never produces.
type rawClient struct {
	t   *testing.T
	ws  *websocket.Conn
	dec *stompframe.Decoder
}

func dialRaw(t *testing.T, url string, protos ...string) *rawClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: protos})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &rawClient{t: t, ws: ws, dec: stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: 1 << 20})}
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

// next returns the next frame, or nil and the error that ended the
// connection. Heart-beat EOLs are skipped.
func (c *rawClient) next(timeout time.Duration) (*stompframe.Frame, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		f, err := c.dec.Next()
		if err != nil {
			c.t.Fatalf("client decode: %v", err)
		}
		if f != nil {
			return f.Clone(), nil
		}
		_, b, err := c.ws.Read(ctx)
		if err != nil {
			return nil, err
		}
		c.dec.Feed(b)
	}
}

func (c *rawClient) expect(cmd string) *stompframe.Frame {
	c.t.Helper()
	f, err := c.next(5 * time.Second)
	if err != nil {
		c.t.Fatalf("waiting for %s: %v", cmd, err)
	}
	if f.Command != cmd {
		c.t.Fatalf("got %s frame %v, want %s", f.Command, f.Headers, cmd)
	}
	return f
}

// expectClosed waits for the server to close the connection and returns
// the close status.
func (c *rawClient) expectClosed() websocket.StatusCode {
	c.t.Helper()
	for {
		f, err := c.next(15 * time.Second)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				c.t.Fatalf("connection still open")
			}
			return websocket.CloseStatus(err)
		}
		c.t.Logf("frame before close: %s %v", f.Command, f.Headers)
	}
}

func (c *rawClient) connect() *stompframe.Frame {
	c.t.Helper()
	c.send("CONNECT\naccept-version:1.2\nhost:test\nheart-beat:0,0\n\n\x00")
	return c.expect("CONNECTED")
}

// countingObserver records the server's events for assertions.
type countingObserver struct {
	mu        sync.Mutex
	opened    int
	closed    map[string]int
	delivered int
	slow      int
	protocol  map[string]int
	panics    int
	paused    int
}

func (o *countingObserver) SessionOpened()   { o.mu.Lock(); o.opened++; o.mu.Unlock() }
func (o *countingObserver) Handshake(string) {}
func (o *countingObserver) SessionClosed(r *CloseReason) {
	o.mu.Lock()
	o.closed[r.String()]++
	o.mu.Unlock()
}
func (o *countingObserver) Delivered(_ string, n int) { o.mu.Lock(); o.delivered += n; o.mu.Unlock() }
func (o *countingObserver) SlowConsumerDisconnect()   { o.mu.Lock(); o.slow++; o.mu.Unlock() }
func (o *countingObserver) ProtocolErrorClose(k string) {
	o.mu.Lock()
	o.protocol[k]++
	o.mu.Unlock()
}
func (o *countingObserver) Panic()        { o.mu.Lock(); o.panics++; o.mu.Unlock() }
func (o *countingObserver) ReaderPaused() { o.mu.Lock(); o.paused++; o.mu.Unlock() }

func (o *countingObserver) closedCount(reason *CloseReason) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed[reason.String()]
}
