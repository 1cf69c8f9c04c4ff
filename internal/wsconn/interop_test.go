package wsconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/coder/websocket"
)

// dialCoder opens a coder/websocket client connection to an echo server;
// it is closed at once when the test ends.
func dialCoder(t *testing.T, srv *echoServer) (*websocket.Conn, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	t.Cleanup(cancel)
	ws, _, err := websocket.Dial(ctx, "ws://"+srv.addr, &websocket.DialOptions{
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		t.Fatalf("websocket.Dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	ws.SetReadLimit(1 << 20)
	return ws, ctx
}

// TestCoderClient runs the package against coder/websocket's client.
func TestCoderClient(t *testing.T) {
	t.Parallel()

	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		ws, ctx := dialCoder(t, srv)
		msgs := []struct {
			typ websocket.MessageType
			p   []byte
		}{
			{websocket.MessageText, []byte("hello")},
			{websocket.MessageBinary, []byte{0, 1, 2, 0xff}},
			{websocket.MessageText, nil},
			{websocket.MessageBinary, pattern(20000, 1)},
			{websocket.MessageText, text(32<<10, 2)},
		}
		for _, m := range msgs {
			if err := ws.Write(ctx, m.typ, m.p); err != nil {
				t.Fatalf("Write(%v, %d bytes): %v", m.typ, len(m.p), err)
			}
			typ, p, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("Read after %v of %d bytes: %v", m.typ, len(m.p), err)
			}
			if typ != m.typ || !bytes.Equal(p, m.p) {
				t.Errorf("echo of %v %s = %v %s", m.typ, short(m.p), typ, short(p))
			}
		}
		if err := ws.Close(websocket.StatusNormalClosure, "done"); err != nil {
			t.Errorf("client Close: %v", err)
		}
		checkEnd(t, srv.next(t), `*CloseError{1000, "done"}`, isCloseError(StatusNormalClosure, "done"))
	})

	t.Run("message in fragments", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		ws, ctx := dialCoder(t, srv)
		w, err := ws.Writer(ctx, websocket.MessageText)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"frag", "ment", "ed"} {
			if _, err := w.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, p, err := ws.Read(ctx); err != nil || string(p) != "fragmented" {
			t.Errorf("Read = %q, %v, want fragmented", p, err)
		}
	})

	t.Run("client closes", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		ws, _ := dialCoder(t, srv)
		if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Errorf("client Close: %v", err)
		}
		checkEnd(t, srv.next(t), "*CloseError{1000}", isCloseError(StatusNormalClosure, ""))
	})

	t.Run("server closes", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
			return c.Close(StatusNormalClosure, "bye")
		}})
		ws, ctx := dialCoder(t, srv)
		_, _, err := ws.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || ce.Reason != "bye" {
			t.Errorf("client Read = %v, want a close with 1000 bye", err)
		}
		// coder/websocket echoes the reason too.
		o := srv.next(t)
		checkEnd(t, o, "*CloseError{1000}", isCloseCode(StatusNormalClosure))
		if o.beside != nil {
			t.Errorf("server Close: %v", o.beside)
		}
	})

	t.Run("client pings", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{})
		ws, ctx := dialCoder(t, srv)
		// The client's pongs arrive through a read; CloseRead keeps one
		// going.
		ctx = ws.CloseRead(ctx)
		for i := range 3 {
			if err := ws.Ping(ctx); err != nil {
				t.Fatalf("Ping %d: %v", i, err)
			}
		}
		if err := ws.Close(websocket.StatusNormalClosure, ""); err != nil {
			t.Errorf("client Close: %v", err)
		}
		checkEnd(t, srv.next(t), "*CloseError{1000}", isCloseError(StatusNormalClosure, ""))
	})

	t.Run("server pings", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{beside: func(c *Conn) error {
			ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
			defer cancel()
			for i := range 3 {
				if err := c.Ping(ctx); err != nil {
					return fmt.Errorf("Ping %d: %w", i, err)
				}
			}
			return c.Close(StatusNormalClosure, "pinged")
		}})
		ws, ctx := dialCoder(t, srv)
		_, _, err := ws.Read(ctx)
		if got := websocket.CloseStatus(err); got != websocket.StatusNormalClosure {
			t.Errorf("client Read = %v, want a close with 1000", err)
		}
		if o := srv.next(t); o.beside != nil {
			t.Error(o.beside)
		}
	})

	t.Run("message over the server's limit", func(t *testing.T) {
		t.Parallel()
		srv := startEcho(t, serverConfig{limit: 100})
		ws, ctx := dialCoder(t, srv)
		if err := ws.Write(ctx, websocket.MessageBinary, pattern(101, 1)); err != nil {
			t.Fatal(err)
		}
		_, _, err := ws.Read(ctx)
		if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
			t.Errorf("client Read = %v, want a close with 1009", err)
		}
		checkEnd(t, srv.next(t), "ErrMessageTooBig", func(err error) bool { return errors.Is(err, ErrMessageTooBig) })
	})
}
