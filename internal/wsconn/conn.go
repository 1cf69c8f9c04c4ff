// Package wsconn is the server side of a WebSocket connection (RFC 6455),
// built for many mostly idle sessions that each send small messages.
//
// On Linux, a Conn over a TCP connection reads and writes its descriptor
// directly and holds no read buffer while it waits for its peer: a
// session's reader borrows a pooled buffer only while bytes are arriving,
// so an idle connection costs its struct and its reader's stack. Elsewhere,
// and over connections with no descriptor (TLS, net.Pipe), it reads and
// writes through net.Conn with the same behaviour, except that a waiting
// reader holds its buffer and TryWriteReserved never writes (see
// descriptor_linux.go and descriptor_portable.go). A message that fits
// in the pooled buffer in one frame is returned in place, unmasked, without
// a copy. Writes go to the socket in one system call per message, the
// frame header written into room the caller leaves in front of the
// payload.
//
// The one extension is permessage-deflate (RFC 7692, extensions.go and
// deflate.go), when AcceptOptions.Compression allows it and the client
// offers it; otherwise every reserved bit must be zero. A compressed
// message inflates into at most the read limit, with a pooled
// decompressor. Text messages are checked to be UTF-8 as their bytes arrive
// (RFC 6455 section 8.1): a message fails at its first invalid byte, not
// when its last fragment comes in.
package wsconn

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MessageType is the type of a data message.
type MessageType int

// The data message types (RFC 6455 section 5.6).
const (
	MessageText   MessageType = 1
	MessageBinary MessageType = 2
)

// StatusCode is a close frame's status code (RFC 6455 section 7.4).
type StatusCode int

// Status codes the server sends or receives.
const (
	StatusNormalClosure           StatusCode = 1000
	StatusGoingAway               StatusCode = 1001
	StatusProtocolError           StatusCode = 1002
	StatusUnsupportedData         StatusCode = 1003
	StatusNoStatusRcvd            StatusCode = 1005
	StatusAbnormalClosure         StatusCode = 1006
	StatusInvalidFramePayloadData StatusCode = 1007
	StatusPolicyViolation         StatusCode = 1008
	StatusMessageTooBig           StatusCode = 1009
	StatusMandatoryExtension      StatusCode = 1010
	StatusInternalError           StatusCode = 1011
	StatusServiceRestart          StatusCode = 1012
	StatusTryAgainLater           StatusCode = 1013
	StatusBadGateway              StatusCode = 1014
)

// MaxHeaderLen is the room a caller of WriteReserved leaves in front of the
// payload: the longest header of an unmasked frame.
const MaxHeaderLen = 10

// ReadBufferSize is the size of the pooled buffers a Conn reads into. One
// buffer is held by a connection only while it has unread bytes; a frame
// larger than the buffer is assembled in a buffer of its own.
const ReadBufferSize = 4 << 10

// CloseTimeout bounds how long Close waits for the peer's close frame
// after sending its own.
const CloseTimeout = 5 * time.Second

// maxControlPayload is the largest payload of a control frame.
const maxControlPayload = 125

var (
	// ErrMessageTooBig is returned by ReadMessage when a message exceeds
	// the read limit. Nothing more can be read; the caller closes the
	// connection, normally with StatusMessageTooBig.
	ErrMessageTooBig = errors.New("wsconn: message exceeds the read limit")
	// ErrInvalidUTF8 is returned by ReadMessage when a text message is
	// not UTF-8 (RFC 6455 section 8.1), at its first invalid byte.
	// Nothing more can be read; the caller closes the connection with
	// StatusInvalidFramePayloadData.
	ErrInvalidUTF8 = errors.New("wsconn: text message is not UTF-8")
	// ErrClosed is returned by writes after a close frame was sent or the
	// connection was closed.
	ErrClosed = errors.New("wsconn: connection closed")
	// ErrWouldWait is returned by TryWriteReserved when writing would
	// mean waiting for another write; nothing was written.
	ErrWouldWait = errors.New("wsconn: another write holds the connection")
)

// CloseError is returned by ReadMessage when the peer sent a close frame.
// The close handshake has been completed and the connection closed.
type CloseError struct {
	Code   StatusCode // StatusNoStatusRcvd when the frame carried none
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("wsconn: peer closed with status %d %q", e.Code, e.Reason)
}

// ProtocolError is returned by ReadMessage when the peer broke RFC 6455.
// The connection cannot be read any further; the caller closes it with
// Code, normally after the frames it already queued.
type ProtocolError struct {
	Code StatusCode // StatusProtocolError or StatusInvalidFramePayloadData
	Text string     // what was wrong, short enough for a close frame's reason
}

func (e *ProtocolError) Error() string { return "wsconn: " + e.Text }

// Conn is the server side of one WebSocket connection.
//
// One goroutine reads (ReadMessage); any number may write, Ping and
// Close concurrently with it and with each other.
type Conn struct {
	nc          net.Conn
	rc          syscall.RawConn // nil when nc has no file descriptor to wait on
	subprotocol string
	// z is the negotiated permessage-deflate; nil: none. Its settings
	// are fixed at the handshake; its takeover compressor is guarded by
	// wmu.
	z *compression

	// Reader state, owned by the goroutine calling ReadMessage.
	in       *[]byte // pooled buffer holding (*in)[r:w] unread; nil when empty
	r, w     int
	stash    []byte    // unread bytes kept while waiting with no pooled buffer
	msg      *[]byte   // a message assembled from fragments or too large for in
	inflated *[]byte   // the last compressed message, inflated; nil: none
	utf8Done int       // bytes of a text msg checked to be whole UTF-8 characters
	limit    int       // largest message ReadMessage returns
	failed   error     // the error that ended reading; sticky
	skip     int       // after a failure, payload bytes of the failed frame left to skip; -1: lost track
	readErr  error     // result of the last read system call
	readAt   time.Time // when the last read system call that returned bytes ended
	readFn   func(fd uintptr) bool
	pongDue  []byte // payload of the latest ping not yet answered
	pongOwed bool
	// beforeWait runs on the reader before it may wait: for input, when
	// the socket has nothing more to read, or to write a pong.
	beforeWait func()
	// onFrame runs on the reader for every frame header read; nil: none.
	onFrame func(payload int)

	// wmu serialises frames on the socket.
	wmu          sync.Mutex
	writeTimeout time.Duration
	rest         []byte // what TryWriteReserved could not write at once
	// The write in progress, for writeStep.
	writeFn    func(fd uintptr) bool
	wbuf       []byte
	wsent      int
	wwait      bool
	werr       error
	closeSent  atomic.Bool
	readFailed atomic.Bool // ReadMessage returned a *ProtocolError, ErrMessageTooBig or ErrInvalidUTF8
	closed     atomic.Bool

	// mu guards the close handshake's and the pings' waiters.
	mu        sync.Mutex
	readEnded bool
	ended     chan struct{} // closed when reading ends; made by the first Close
	pings     []*pingWaiter
	pingSeq   uint64
}

// Subprotocol returns the subprotocol chosen during the handshake, or "".
func (c *Conn) Subprotocol() string { return c.subprotocol }

// Compressed reports whether permessage-deflate was negotiated, with or
// without context takeover.
func (c *Conn) Compressed() bool { return c.z != nil }

// SetReadLimit sets the largest message ReadMessage returns; a larger one
// is ErrMessageTooBig. The default is 32 KiB.
func (c *Conn) SetReadLimit(n int) { c.limit = n }

// SetBeforeWait sets f to run on the goroutine calling ReadMessage each
// time it may be about to wait: it has read everything that arrived and
// waits for more, or it answers a ping, which waits on a peer that does
// not read. f may run while the reader holds the descriptor for reading:
// it must not read from c, and must not close c or any connection whose
// reader may be running f too (closing waits for reads on the descriptor
// to end). It may write, and should not wait.
func (c *Conn) SetBeforeWait(f func()) { c.beforeWait = f }

// SetFrameHook sets f to run on the goroutine calling ReadMessage for
// every frame the peer sends, once its header is read and before its
// payload is: data frames, continuation fragments (empty ones too) and
// control frames alike, with the payload length the header gives.
// ReadMessage returns only whole messages, so this is how a caller
// accounts for frames that never complete one. f may wait: while it does
// nothing more is read, and TCP pushes back on the peer. It must not
// read from c. Call it on the goroutine calling ReadMessage, or before
// the first ReadMessage; nil removes the hook.
func (c *Conn) SetFrameHook(f func(payload int)) { c.onFrame = f }

// ReadTime returns when the last read system call that brought bytes in
// ended: for the message ReadMessage last returned, when its last bytes
// had arrived. Messages read together share it, which spares the caller a
// clock read per message. Call it on the goroutine calling ReadMessage.
func (c *Conn) ReadTime() time.Time { return c.readAt }

// SetWriteTimeout bounds every frame write; zero means no bound.
func (c *Conn) SetWriteTimeout(d time.Duration) {
	c.wmu.Lock()
	c.writeTimeout = d
	c.wmu.Unlock()
}

// SetReadDeadline sets the deadline for ReadMessage's reads.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }
