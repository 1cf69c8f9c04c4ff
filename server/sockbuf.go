package server

import "net"

// Listener returns ln with the kernel send buffer (SO_SNDBUF) of every
// TCP connection it accepts set to Config.SocketSendBuffer, or ln itself
// when that is negative. Serve the http.Server that hands the WebSocket
// path to s on it: the buffer is set before the first byte is written, and
// a socket whose size is set is no longer grown by the kernel's
// autotuning. Connections that are not TCP are returned as they are.
//
// (*net.TCPConn).SetWriteBuffer is portable; Linux doubles the value for
// its own bookkeeping and caps it at net.core.wmem_max.
func (s *Server) Listener(ln net.Listener) net.Listener {
	if s.cfg.SocketSendBuffer <= 0 {
		return ln
	}
	return sendBufferListener{Listener: ln, size: s.cfg.SocketSendBuffer}
}

// sendBufferListener sets each accepted TCP connection's send buffer.
type sendBufferListener struct {
	net.Listener
	size int
}

// Accept returns the next connection, its send buffer set. The
// connection is returned unwrapped, so that the HTTP server and the
// WebSocket layer see the *net.TCPConn itself.
func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// A platform that refuses keeps its own sizing; the outbound
		// queue bounds still hold.
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, nil
}
