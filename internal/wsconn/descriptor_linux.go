//go:build linux && !wsconn_portable

package wsconn

import (
	"io"
	"syscall"
	"time"
	"unsafe"
)

// The raw path, on Linux: reads and writes are read(2) and write(2) on
// the connection's non-blocking descriptor, run inside syscall.RawConn's
// Read and Write so the runtime's poller does the waiting. It is what
// lets a waiting connection hand its read buffer back and lets
// TryWriteReserved write without waiting. It is built only where it is
// measured; elsewhere (and with the wsconn_portable build tag) the
// connection goes through net.Conn (see descriptor_portable.go).

// useDescriptor sets c up to read and write its descriptor directly when
// its net.Conn has one.
func (c *Conn) useDescriptor() {
	sc, ok := c.nc.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return
	}
	if rc, err := sc.SyscallConn(); err == nil {
		c.rc = rc
		c.readFn = c.readRaw
		c.writeFn = c.writeStep
	}
}

// readRaw is the read on the descriptor, run by syscall.RawConn.Read: when
// nothing is there to read, the buffer goes back to the pool (unread bytes
// are kept aside) before the goroutine waits, so a waiting connection
// holds no buffer.
func (c *Conn) readRaw(fd uintptr) bool {
	if c.in == nil {
		c.take()
	}
	for {
		n, err := rawRead(fd, (*c.in)[c.w:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			if c.beforeWait != nil {
				c.beforeWait()
			}
			if c.r < c.w {
				c.stash = append([]byte(nil), (*c.in)[c.r:c.w]...)
			}
			readPool.Put(c.in)
			c.in, c.r, c.w = nil, 0, 0
			return false
		case err != nil:
			c.readErr = &readError{err}
		case n == 0:
			c.readErr = io.EOF
		default:
			c.w += n
			c.readAt = time.Now()
		}
		return true
	}
}

// readError wraps a failed read(2).
type readError struct{ err error }

func (e *readError) Error() string { return "wsconn: read: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// writeStep is the write on the descriptor, run by syscall.RawConn.Write
// with the state writeNow or writeRaw left in c: it writes c.wbuf from
// c.wsent on until all is written, the socket is full (when c.wwait is
// not set) or write(2) fails. A prebuilt function and fields on c, rather
// than a closure, keep a write from allocating.
func (c *Conn) writeStep(fd uintptr) bool {
	for c.wsent < len(c.wbuf) {
		n, err := rawWrite(fd, c.wbuf[c.wsent:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return !c.wwait
		case err != nil:
			c.werr = &writeError{err}
			return true
		}
		c.wsent += n
	}
	return true
}

// writeError wraps a failed write(2).
type writeError struct{ err error }

func (e *writeError) Error() string { return "wsconn: write: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// rawRead and rawWrite are read(2) and write(2) on the connection's
// non-blocking descriptor. They do not tell the scheduler they are in a
// system call: they cannot block, so there is no processor to hand off,
// and the scheduler's monitor is not woken to take one.
func rawRead(fd uintptr, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawWrite(fd uintptr, b []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
