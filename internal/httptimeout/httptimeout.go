// Package httptimeout tells which connections of an http.Server its own
// timeouts closed, and while doing what: net/http closes them silently,
// and a server that bounds slow and idle peers should count what the
// bounds cut.
package httptimeout

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind is what a connection closed by a timeout was doing.
type Kind uint8

const (
	// Read: a request came too slowly (ReadHeaderTimeout, ReadTimeout).
	Read Kind = iota
	// Idle: a keep-alive connection waited too long for its next request
	// (IdleTimeout).
	Idle
)

// Count wraps ln so that timedOut is called, once, for each connection
// of hs that one of its timeouts closed, with what the connection was
// doing. Connections closed otherwise (by the client, after a handler, by
// a hijack) are not reported. It sets hs.ConnState; serve hs on the
// listener returned.
func Count(ln net.Listener, hs *http.Server, timedOut func(Kind)) net.Listener {
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		if tc, ok := c.(*tls.Conn); ok {
			// A TLS listener outside ln: the watched connection is
			// under it.
			c = tc.NetConn()
		}
		wc, ok := c.(*watchedConn)
		if !ok {
			return
		}
		if st != http.StateClosed {
			wc.state.Store(int32(st))
			if st == http.StateIdle {
				// A read aborted while the request was handled is no
				// timeout of the next one.
				wc.timedOut.Store(false)
			}
			return
		}
		if !wc.timedOut.Load() {
			return
		}
		if http.ConnState(wc.state.Load()) == http.StateIdle {
			timedOut(Idle)
		} else {
			timedOut(Read)
		}
	}
	return watchedListener{ln}
}

// watchedListener hands out watchedConns.
type watchedListener struct{ net.Listener }

func (l watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// watchedConn notes whether a read ended because its deadline passed.
// net/http also sets a deadline in the past to abort a background read
// while a handler runs; such reads are not timeouts and are not noted.
// After a hijack the connection is a WebSocket session's, which reads
// without deadlines.
type watchedConn struct {
	net.Conn
	state    atomic.Int32 // the http.ConnState last reported
	aborting atomic.Bool  // the read deadline was set in the past
	timedOut atomic.Bool  // a read ran into its deadline
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.aborting.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
		c.timedOut.Store(true)
	}
	return n, err
}

func (c *watchedConn) SetDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *watchedConn) SetReadDeadline(t time.Time) error {
	c.noteDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *watchedConn) noteDeadline(t time.Time) {
	c.aborting.Store(!t.IsZero() && t.Before(time.Now()))
}

// CloseWrite keeps net/http's graceful close of a TCP connection (it
// half-closes before closing after an error response).
func (c *watchedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the kernel's sendfile path for responses copied from a
// file.
func (c *watchedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// SyscallConn exposes the descriptor, so that a WebSocket session can wait
// for bytes on it without holding a read buffer.
func (c *watchedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("httptimeout: the connection has no descriptor")
}
