package wsconn

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// serverConfig sets up an echo server.
type serverConfig struct {
	opts  *AcceptOptions
	limit int // read limit; zero keeps the default
	// beside, when set, runs in its own goroutine next to the echo loop
	// once the connection is open; its error is the outcome's beside.
	beside func(c *Conn) error
	// setup, when set, runs on the connection before the echo loop
	// starts.
	setup func(c *Conn)
}

// outcome is what one handler saw.
type outcome struct {
	accept      error  // Accept's error; nothing else is set when non-nil
	subprotocol string // Conn.Subprotocol
	end         error  // the error that ended the echo loop
	closeErr    error  // Close's result after a protocol error or a too big message
	again       error  // ReadMessage's result after end
	beside      error  // serverConfig.beside's result
}

// echoServer is an httptest.Server whose handler accepts a WebSocket and
// echoes every message back with its type until reading fails.
type echoServer struct {
	srv      *httptest.Server
	addr     string // host:port
	outcomes chan outcome
}

// startEcho starts an echo server that stops when the test ends, after
// every handler has returned.
func startEcho(tb testing.TB, cfg serverConfig) *echoServer {
	tb.Helper()
	s := &echoServer{outcomes: make(chan outcome, 64)}
	var handlers sync.WaitGroup
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		s.outcomes <- serve(w, r, cfg)
	}))
	s.addr = strings.TrimPrefix(s.srv.URL, "http://")
	tb.Cleanup(func() {
		// Close returns once every connection is hijacked or closed,
		// so no handler starts after it.
		s.srv.Close()
		done := make(chan struct{})
		go func() { handlers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * CloseTimeout):
			tb.Errorf("echo handlers still running %v after the test", 2*CloseTimeout)
		}
	})
	return s
}

// serve is the echo handler's body.
func serve(w http.ResponseWriter, r *http.Request, cfg serverConfig) outcome {
	c, err := Accept(w, r, cfg.opts)
	if err != nil {
		return outcome{accept: err}
	}
	out := outcome{subprotocol: c.Subprotocol()}
	if cfg.limit > 0 {
		c.SetReadLimit(cfg.limit)
	}
	if cfg.setup != nil {
		cfg.setup(c)
	}
	var beside chan error
	if cfg.beside != nil {
		beside = make(chan error, 1)
		go func() { beside <- cfg.beside(c) }()
	}
	out.end, out.closeErr = echo(c)
	_, _, out.again = c.ReadMessage()
	if beside != nil {
		out.beside = <-beside
	}
	_ = c.CloseNow()
	return out
}

// echo writes every message back until ReadMessage fails, then closes the
// connection as a caller of the package should: with the protocol error's
// code, with 1009 for a message over the limit, with 1007 for a text
// message that is not UTF-8, at once otherwise. Close
// runs beside one more ReadMessage, which reads on to the peer's answer.
func echo(c *Conn) (end, closeErr error) {
	for {
		typ, p, err := c.ReadMessage()
		if err != nil {
			var pe *ProtocolError
			code, reason := StatusCode(0), ""
			switch {
			case errors.As(err, &pe):
				code, reason = pe.Code, pe.Text
			case errors.Is(err, ErrMessageTooBig):
				code, reason = StatusMessageTooBig, "message too big"
			case errors.Is(err, ErrInvalidUTF8):
				code, reason = StatusInvalidFramePayloadData, "invalid UTF-8"
			default:
				_ = c.CloseNow()
				return err, nil
			}
			closed := make(chan error, 1)
			go func() { closed <- c.Close(code, reason) }()
			if _, _, again := c.ReadMessage(); !errors.Is(again, err) {
				closed := <-closed
				return err, errors.Join(closed, fmt.Errorf("ReadMessage after %v: %v, want the same error", err, again))
			}
			return err, <-closed
		}
		if err := c.WriteMessage(typ, p); err != nil {
			_ = c.CloseNow()
			return err, nil
		}
	}
}

// next returns the outcome of the next handler to finish.
func (s *echoServer) next(tb testing.TB) outcome {
	tb.Helper()
	select {
	case o := <-s.outcomes:
		return o
	case <-time.After(ioTimeout + CloseTimeout):
		tb.Fatalf("no handler finished within %v", ioTimeout+CloseTimeout)
		return outcome{}
	}
}
