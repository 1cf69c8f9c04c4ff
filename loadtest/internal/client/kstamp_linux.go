//go:build linux

package client

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"syscall"
)

const kernelStampsSupported = true

// stampedConn is a TCP connection whose reads go through recvmsg with
// SO_TIMESTAMPNS on, keeping the kernel receive time of each read. For
// TCP the kernel reports the time of the last segment a read consumed.
type stampedConn struct {
	net.Conn
	rc     syscall.RawConn
	stamps RecvStamps
	// oob receives the control messages of one read; owned by the
	// reading goroutine. One SCM_TIMESTAMPNS takes 32 bytes on a 64-bit
	// platform.
	oob [64]byte
}

// stampConn turns SO_TIMESTAMPNS on for c and wraps it; ok is false (c
// unchanged) when c is not a TCP connection or the option is refused.
func stampConn(c net.Conn) (net.Conn, *RecvStamps, bool) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil, false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil, false
	}
	sc := &stampedConn{Conn: c, rc: rc}
	return sc, &sc.stamps, true
}

// Read reads into p with recvmsg and keeps the kernel receive time the
// control message carries.
func (c *stampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var serr error
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, serr = syscall.Recvmsg(int(fd), p, c.oob[:], 0)
			if serr != syscall.EINTR {
				break
			}
		}
		// EAGAIN: wait until the socket is readable and try again.
		return serr != syscall.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	if ns, ok := parseRecvStamp(c.oob[:oobn]); ok {
		c.stamps.last.Store(ns)
	}
	return n, nil
}

// wordSize is the size of a C long on Linux: the cmsg length field, the
// alignment of control messages and each field of the timespec that
// SCM_TIMESTAMPNS carries.
const wordSize = strconv.IntSize / 8

// cmsgHeaderLen is struct cmsghdr: the length (a size_t), the level and
// the type (two ints).
const cmsgHeaderLen = wordSize + 4 + 4

// readWord reads one native-endian word.
func readWord(b []byte) int64 {
	if wordSize == 8 {
		return int64(binary.NativeEndian.Uint64(b))
	}
	return int64(int32(binary.NativeEndian.Uint32(b)))
}

// cmsgAlign rounds n up to the alignment of control messages.
func cmsgAlign(n int) int { return (n + wordSize - 1) &^ (wordSize - 1) }

// parseRecvStamp finds the SCM_TIMESTAMPNS control message in oob and
// returns its time in Unix nanoseconds; ok is false when there is none
// or oob is malformed. It allocates nothing, unlike
// syscall.ParseSocketControlMessage.
func parseRecvStamp(oob []byte) (ns int64, ok bool) {
	for len(oob) >= cmsgHeaderLen {
		l := readWord(oob)
		level := int32(binary.NativeEndian.Uint32(oob[wordSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[wordSize+4:]))
		if l < cmsgHeaderLen || l > int64(len(oob)) {
			return 0, false
		}
		if level == syscall.SOL_SOCKET && typ == syscall.SCM_TIMESTAMPNS && l >= cmsgHeaderLen+2*wordSize {
			sec := readWord(oob[cmsgHeaderLen:])
			nsec := readWord(oob[cmsgHeaderLen+wordSize:])
			if sec <= 0 || nsec < 0 || nsec >= 1e9 {
				return 0, false
			}
			return sec*1e9 + nsec, true
		}
		next := cmsgAlign(int(l))
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return 0, false
}
