//go:build linux

package admission

import (
	"net"
	"syscall"
	"time"
)

// deferAccept has the kernel hand ln's connections to Accept only once
// their first bytes arrived (TCP_DEFER_ACCEPT, nginx's "deferred"), or
// after wait: a refusal written at accept then answers a request the
// client has sent, which an HTTP client reads as its response (one that
// came before the request would be "unsolicited" to it, Go's among
// them), and a client that connects and sends nothing waits in the
// kernel's handshake queue rather than holding an accepted socket. It
// reports whether the option was set.
func deferAccept(ln net.Listener, wait time.Duration) bool {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return false
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return false
	}
	secs := int((wait + time.Second - 1) / time.Second)
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, max(secs, 1))
	}); err != nil || serr != nil {
		return false
	}
	return true
}
