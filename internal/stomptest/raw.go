package stomptest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/stompframe"
)

// Raw speaks STOMP by hand over a WebSocket, for the frames a well-behaved
// client library never sends: malformed frames, floods, several frames in
// one message. Every step is bounded by Timeout unless it takes its own.
type Raw struct {
	tb testing.TB
	// WS is the connection, for tests that write or read messages
	// themselves.
	WS *websocket.Conn
	// Dec decodes what the server sends; feed it what WS.Read returns
	// when reading by hand.
	Dec *stompframe.Decoder
}

// NewRaw wraps an open WebSocket. Frames the server sends are decoded
// with a 1 MiB limit, and the read limit is raised to match.
func NewRaw(tb testing.TB, ws *websocket.Conn) *Raw {
	ws.SetReadLimit(1 << 20)
	return &Raw{tb: tb, WS: ws, Dec: stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: 1 << 20})}
}

// DialRaw opens a WebSocket to url offering protos (none: no
// subprotocol) and wraps it; the connection is closed when the test ends.
func DialRaw(tb testing.TB, url string, protos ...string) *Raw {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: protos})
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	tb.Cleanup(func() { _ = ws.CloseNow() })
	return NewRaw(tb, ws)
}

// Send writes s as one text WebSocket message.
func (c *Raw) Send(s string) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := c.WS.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.tb.Fatalf("write %.60q: %v", s, err)
	}
}

// Next returns the next frame (heart-beat EOLs skipped), or nil and the
// error that ended the connection or the wait.
func (c *Raw) Next(timeout time.Duration) (*stompframe.Frame, error) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		f, err := c.Dec.Next()
		if err != nil {
			c.tb.Fatalf("decoding a server frame: %v", err)
		}
		if f != nil {
			return f.Clone(), nil
		}
		_, b, err := c.WS.Read(ctx)
		if err != nil {
			return nil, err
		}
		c.Dec.Feed(b)
	}
}

// Read returns the next frame, failing the test if none arrives within
// Timeout.
func (c *Raw) Read() *stompframe.Frame {
	c.tb.Helper()
	f, err := c.Next(Timeout)
	if err != nil {
		c.tb.Fatalf("reading a frame: %v", err)
	}
	return f
}

// Expect returns the next frame, failing the test unless its command is
// cmd.
func (c *Raw) Expect(cmd string) *stompframe.Frame {
	c.tb.Helper()
	f := c.Read()
	if f.Command != cmd {
		c.tb.Fatalf("got %s frame %v, want %s", f.Command, f.Headers, cmd)
	}
	return f
}

// ExpectClosed reads until the server closes the connection and returns
// the close status (-1 for a connection dropped without one). Frames
// before the close are logged.
func (c *Raw) ExpectClosed() websocket.StatusCode {
	c.tb.Helper()
	for {
		f, err := c.Next(15 * time.Second)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				c.tb.Fatalf("connection still open")
			}
			return websocket.CloseStatus(err)
		}
		c.tb.Logf("frame before close: %s %v", f.Command, f.Headers)
	}
}

// Connect sends a STOMP 1.2 CONNECT without heart-beats and returns the
// CONNECTED frame.
func (c *Raw) Connect() *stompframe.Frame {
	c.tb.Helper()
	c.Send("CONNECT\naccept-version:1.2\nhost:test\nheart-beat:0,0\n\n\x00")
	return c.Expect("CONNECTED")
}
