//go:build linux

package server

import (
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// acceptedConns records the connections a listener hands out.
type acceptedConns struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *acceptedConns) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *acceptedConns) all() []net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]net.Conn(nil), l.conns...)
}

// sendBuffer reads a socket's SO_SNDBUF and the bytes waiting in its
// send queue (SIOCOUTQ).
func sendBuffer(t *testing.T, c net.Conn) (size, queued int) {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		size, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		if serr != nil {
			return
		}
		var n int32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n))); e != 0 {
			serr = e
		}
		queued = int(n)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		t.Fatal(err)
	}
	return size, queued
}

// TestSocketSendBufferCap reads the send buffer of an accepted socket back
// with getsockopt: Config.SocketSendBuffer is set at accept (Linux
// reports twice the value, its bookkeeping included), and a peer that
// never reads does not make the kernel grow it or queue more than it.
func TestSocketSendBufferCap(t *testing.T) {
	const sndbuf = 64 << 10
	var accepted *acceptedConns
	ts := startListeningServer(t, Config{SocketSendBuffer: sndbuf, OutboundBytes: 8 << 20, WriteTimeout: time.Minute},
		func(ln net.Listener) net.Listener { accepted = &acceptedConns{Listener: ln}; return accepted })
	_, id := dialStuck(t, ts.url, "/topic/fill")
	conns := accepted.all()
	if len(conns) != 1 {
		t.Fatalf("%d connections accepted, want 1", len(conns))
	}
	if size, _ := sendBuffer(t, conns[0]); size < sndbuf || size > 2*sndbuf {
		t.Fatalf("SO_SNDBUF after accept = %d, want %d (doubled by Linux: at most %d)", size, sndbuf, 2*sndbuf)
	}

	pub := dialRaw(t, ts.url)
	pub.Connect()
	body := strings.Repeat("f", 60_000)
	for range 40 {
		pub.Send("SEND\ndestination:/topic/fill\n\n" + body + "\x00")
	}
	pub.Send("SEND\ndestination:/topic/none\nreceipt:r\n\n\x00")
	pub.Expect("RECEIPT")
	waitFor(t, func() bool { f, _ := ts.held(t, id); return f > 1 })
	size, queued := sendBuffer(t, conns[0])
	if size > 2*sndbuf || queued > 2*sndbuf+64<<10 {
		t.Errorf("with the peer not reading: SO_SNDBUF %d, %d bytes queued in the kernel; want at most %d and %d (the buffer, and one write the kernel lets overshoot it)", size, queued, 2*sndbuf, 2*sndbuf+64<<10)
	}
	t.Logf("SO_SNDBUF %d, %d bytes in the kernel's send queue, %d accepted connections", size, queued, len(accepted.all()))
}
