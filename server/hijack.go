package server

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"time"
)

// Per-session socket buffers. net/http hands a hijacked connection over
// with its 4 KiB reader and 4 KiB writer, which an idle session would hold
// forever; these smaller ones keep a session within its memory budget.
// STOMP frames from chat and game clients are a few hundred bytes, and a
// read or write larger than the buffer bypasses it.
const (
	sessionReadBuffer  = 1 << 10
	sessionWriteBuffer = 1 << 10
)

// leanHijacker wraps a ResponseWriter so that Hijack returns a connection
// with small buffers. Bytes the HTTP server had already read past the
// request stay in front of the connection.
type leanHijacker struct {
	http.ResponseWriter
	status int      // the status written by a refused upgrade
	conn   net.Conn // the hijacked connection, for a session's abort
}

// WriteHeader records the status so a refused upgrade can be counted by
// its cause.
func (w *leanHijacker) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *leanHijacker) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack implements http.Hijacker.
func (w *leanHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The HTTP server's ReadTimeout, ReadHeaderTimeout and WriteTimeout
	// deadlines are for one request; a session must not inherit them, or
	// it dies at the first read after ReadTimeout. net/http clears them
	// on hijack today; clearing here keeps that true behind any
	// ResponseWriter, and the session bounds its reads and writes itself.
	w.conn = conn
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	if n := brw.Reader.Buffered(); n > 0 {
		// The client may send its first frame right behind the upgrade
		// request. coder/websocket re-seats the returned reader on the
		// returned conn, so the pending bytes must come from the conn.
		pending, _ := brw.Reader.Peek(n)
		conn = &pendingConn{Conn: conn, pending: bytes.Clone(pending)}
	}
	return conn, bufio.NewReadWriter(
		bufio.NewReaderSize(conn, sessionReadBuffer),
		bufio.NewWriterSize(conn, sessionWriteBuffer),
	), nil
}

// pendingConn is a net.Conn whose first reads return bytes already read
// from the socket by the HTTP server.
type pendingConn struct {
	net.Conn
	pending []byte
}

func (c *pendingConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.Conn.Read(p)
}
