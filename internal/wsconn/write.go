package wsconn

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"
	"unicode/utf8"
)

// WriteReserved sends buf[MaxHeaderLen:] as one message of type typ, in
// one write to the socket: the frame header goes into the room the caller
// left at the front of buf, which is overwritten. With permessage-deflate
// negotiated, a payload of at least CompressionOptions.MinSize bytes is
// compressed first into a pooled buffer (with the connection's own
// compressor under ContextTakeover).
func (c *Conn) WriteReserved(typ MessageType, buf []byte) error {
	if c.compresses(buf) {
		return c.writeDeflating(byte(typ), buf[MaxHeaderLen:])
	}
	return c.writeReserved(byte(typ), buf)
}

// WriteDeflatedReserved is WriteReserved for a payload already
// compressed by AppendDeflated: buf[MaxHeaderLen:] goes out as is, marked
// compressed. The connection must share compressed encodings
// (SharesDeflated).
func (c *Conn) WriteDeflatedReserved(typ MessageType, buf []byte) error {
	if !c.SharesDeflated() {
		return errNotShared
	}
	return c.writeReserved(byte(typ)|rsv1, buf)
}

// SharesDeflated reports whether permessage-deflate was negotiated
// without context takeover, so that one AppendDeflated encoding of a
// message can be written to this connection (WriteDeflatedReserved,
// TryWriteDeflatedReserved).
func (c *Conn) SharesDeflated() bool { return c.z != nil && !c.z.takeoverOn }

// errNotShared is returned when a compressed encoding is written to a
// connection that cannot take it.
var errNotShared = errors.New("wsconn: connection did not negotiate permessage-deflate without context takeover")

// compresses reports whether WriteReserved compresses buf's payload.
func (c *Conn) compresses(buf []byte) bool {
	return c.z != nil && len(buf)-MaxHeaderLen >= c.z.minSize
}

// writeReserved writes buf[MaxHeaderLen:] as one frame with opcode op
// (and rsv1 when op carries it).
func (c *Conn) writeReserved(op byte, buf []byte) error {
	n := len(buf) - MaxHeaderLen
	hl := headerLen(n)
	off := MaxHeaderLen - hl
	putHeader(buf[off:MaxHeaderLen], op, n)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent.Load() {
		return ErrClosed
	}
	return c.writeLocked(buf[off:])
}

// deflateBufs pools the buffers messages are compressed into on their way
// to one connection.
var deflateBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, 1<<10)
	return &b
}}

// putDeflateBuf pools b unless a rare large message grew it.
func putDeflateBuf(b *[]byte) {
	if cap(*b) <= maxPooledMessage {
		deflateBufs.Put(b)
	}
}

// deflateInto compresses p into *b after room for a frame header and
// returns the reserved buffer; under context takeover wmu must be held,
// so that messages are compressed in the order they are written.
func (c *Conn) deflateInto(b *[]byte, p []byte) []byte {
	dst := append((*b)[:0], make([]byte, MaxHeaderLen)...)
	if c.z.takeoverOn {
		dst = c.z.deflateTakeover(dst, p)
	} else {
		dst = AppendDeflated(dst, p, c.z.level)
	}
	*b = dst
	return dst
}

// writeDeflating compresses p and writes it as one compressed frame.
func (c *Conn) writeDeflating(op byte, p []byte) error {
	b := deflateBufs.Get().(*[]byte)
	defer putDeflateBuf(b)
	if !c.z.takeoverOn {
		return c.writeReserved(op|rsv1, c.deflateInto(b, p))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent.Load() {
		return ErrClosed
	}
	buf := c.deflateInto(b, p)
	n := len(buf) - MaxHeaderLen
	hl := headerLen(n)
	off := MaxHeaderLen - hl
	putHeader(buf[off:MaxHeaderLen], op|rsv1, n)
	return c.writeLocked(buf[off:])
}

// TryWriteReserved is WriteReserved for a caller that must not wait on
// this peer: it writes what the socket takes at once and keeps a copy of
// the rest, which goes out before anything written later (see Flush). It
// reports whether all of the message went out; when it did not, the
// caller has Flush called soon, on a goroutine that may wait, and the
// copy is held only until then. While a rest is held, a further message
// is added to it whole. When another write holds the connection, or the
// connection has no descriptor to write to without waiting, it writes
// nothing and returns ErrWouldWait; after any error nothing of buf was
// sent or kept. buf itself is not kept. It compresses as WriteReserved
// does.
func (c *Conn) TryWriteReserved(typ MessageType, buf []byte) (bool, error) {
	if !c.compresses(buf) {
		return c.tryWriteReserved(byte(typ), buf, nil)
	}
	b := deflateBufs.Get().(*[]byte)
	defer putDeflateBuf(b)
	if c.z.takeoverOn {
		// Compressed under the write lock, in write order.
		return c.tryWriteReserved(byte(typ)|rsv1, nil, func() []byte { return c.deflateInto(b, buf[MaxHeaderLen:]) })
	}
	return c.tryWriteReserved(byte(typ)|rsv1, c.deflateInto(b, buf[MaxHeaderLen:]), nil)
}

// TryWriteDeflatedReserved is TryWriteReserved for a payload already
// compressed by AppendDeflated (see WriteDeflatedReserved).
func (c *Conn) TryWriteDeflatedReserved(typ MessageType, buf []byte) (bool, error) {
	if !c.SharesDeflated() {
		return false, errNotShared
	}
	return c.tryWriteReserved(byte(typ)|rsv1, buf, nil)
}

// tryWriteReserved is TryWriteReserved of buf with opcode op; when buf is
// nil, fill makes it once the write lock is held.
func (c *Conn) tryWriteReserved(op byte, buf []byte, fill func() []byte) (bool, error) {
	if !c.wmu.TryLock() {
		return false, ErrWouldWait
	}
	defer c.wmu.Unlock()
	if c.closeSent.Load() {
		return false, ErrClosed
	}
	if c.rc == nil {
		return false, ErrWouldWait
	}
	if buf == nil {
		buf = fill()
	}
	n := len(buf) - MaxHeaderLen
	hl := headerLen(n)
	off := MaxHeaderLen - hl
	putHeader(buf[off:MaxHeaderLen], op, n)
	b := buf[off:]
	if len(c.rest) > 0 {
		c.rest = append(c.rest, b...)
		return false, nil
	}
	sent, err := c.writeNow(b)
	switch {
	case err != nil && fill != nil:
		// The message is in the connection's compressor window: it
		// must go out as compressed, after what went before and ahead
		// of what follows, or every later message would inflate
		// against another window. A write that failed before its first
		// byte (a write deadline left over from an earlier write has
		// passed, and the descriptor refuses to start) is kept whole,
		// for the Flush the caller has run soon, which waits under a
		// fresh deadline or fails and ends the connection.
		c.rest = append([]byte(nil), b[sent:]...)
		return false, nil
	case err != nil && sent > 0:
		// The stream is cut inside a frame: nothing more can follow.
		c.closeSent.Store(true)
		return false, err
	case err != nil:
		return false, err
	case sent < len(b):
		c.rest = append([]byte(nil), b[sent:]...)
		return false, nil
	}
	return true, nil
}

// writeNow writes as much of b as the socket takes without waiting and
// returns how much that was; wmu is held.
func (c *Conn) writeNow(b []byte) (int, error) {
	c.wbuf, c.wsent, c.wwait, c.werr = b, 0, false, nil
	err := c.rc.Write(c.writeFn)
	sent := c.wsent
	if err == nil {
		err = c.werr
	}
	c.wbuf, c.werr = nil, nil
	return sent, err
}

// Flush sends what TryWriteReserved kept, waiting for the socket as
// writes do (bounded by the write timeout).
func (c *Conn) Flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.flushLocked()
}

// flushLocked sends the rest TryWriteReserved kept; wmu is held.
func (c *Conn) flushLocked() error {
	if len(c.rest) == 0 {
		return nil
	}
	b := c.rest
	c.rest = nil
	return c.writeRaw(b)
}

// WriteMessage sends p as one message of type typ, compressed as
// WriteReserved compresses.
func (c *Conn) WriteMessage(typ MessageType, p []byte) error {
	if c.z != nil && len(p) >= c.z.minSize {
		return c.writeDeflating(byte(typ), p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent.Load() {
		return ErrClosed
	}
	return c.writeFrameLocked(byte(typ), p)
}

// writeControl sends a ping or pong unless a close frame was sent.
func (c *Conn) writeControl(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent.Load() {
		return ErrClosed
	}
	return c.writeFrameLocked(op, p)
}

// smallFrames holds buffers for frames of up to smallFrame payload bytes,
// written with their header in one write.
const smallFrame = 512

var smallFrames = sync.Pool{New: func() any { return new([MaxHeaderLen + smallFrame]byte) }}

// writeFrameLocked writes one final frame with payload p; wmu is held.
func (c *Conn) writeFrameLocked(op byte, p []byte) error {
	if err := c.flushLocked(); err != nil {
		return err
	}
	hl := headerLen(len(p))
	if len(p) <= smallFrame {
		b := smallFrames.Get().(*[MaxHeaderLen + smallFrame]byte)
		defer smallFrames.Put(b)
		putHeader(b[:hl], op, len(p))
		n := copy(b[hl:], p)
		return c.writeRaw(b[:hl+n])
	}
	var h [MaxHeaderLen]byte
	putHeader(h[:hl], op, len(p))
	bufs := net.Buffers{h[:hl], p}
	c.deadline()
	_, err := bufs.WriteTo(c.nc)
	return err
}

// writeLocked writes b after anything TryWriteReserved kept; wmu is held.
func (c *Conn) writeLocked(b []byte) error {
	if err := c.flushLocked(); err != nil {
		return err
	}
	return c.writeRaw(b)
}

// writeRaw writes b, waiting for the socket up to the write timeout; wmu
// is held.
func (c *Conn) writeRaw(b []byte) error {
	c.deadline()
	if c.rc == nil {
		_, err := c.nc.Write(b)
		return err
	}
	c.wbuf, c.wsent, c.wwait, c.werr = b, 0, true, nil
	err := c.rc.Write(c.writeFn)
	if err == nil {
		err = c.werr
	}
	c.wbuf, c.werr = nil, nil
	return err
}

// deadline bounds the write about to start; wmu is held.
func (c *Conn) deadline() {
	if c.writeTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	}
}

func headerLen(n int) int {
	switch {
	case n < 126:
		return 2
	case n <= 0xffff:
		return 4
	}
	return 10
}

// putHeader writes the header of a final, unmasked frame into h, which is
// exactly headerLen(n) long; op may carry rsv1.
func putHeader(h []byte, op byte, n int) {
	h[0] = 0x80 | op
	switch len(h) {
	case 2:
		h[1] = byte(n)
	case 4:
		h[1] = 126
		binary.BigEndian.PutUint16(h[2:], uint16(n))
	default:
		h[1] = 127
		binary.BigEndian.PutUint64(h[2:], uint64(n))
	}
}

// pingWaiter is a Ping waiting for the pong that echoes its payload.
type pingWaiter struct {
	payload [8]byte
	done    chan struct{}
	err     error // set before done closes: nil, or the connection closed
}

// Ping sends a ping and waits for its pong, which a concurrent
// ReadMessage takes in, or until ctx is done or the connection closes
// (net.ErrClosed).
func (c *Conn) Ping(ctx context.Context) error {
	w := &pingWaiter{done: make(chan struct{})}
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.pingSeq++
	binary.BigEndian.PutUint64(w.payload[:], c.pingSeq)
	c.pings = append(c.pings, w)
	c.mu.Unlock()
	defer c.dropPing(w)

	if err := c.writeControl(opPing, w.payload[:]); err != nil {
		return err
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Conn) dropPing(w *pingWaiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.pings {
		if x == w {
			c.pings = append(c.pings[:i], c.pings[i+1:]...)
			break
		}
	}
	if len(c.pings) == 0 {
		c.pings = nil
	}
}

// pong wakes the Ping whose payload p echoes; other pongs are unsolicited
// and ignored (RFC 6455 section 5.5.3).
func (c *Conn) pong(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range c.pings {
		if string(w.payload[:]) == string(p) {
			close(w.done)
			c.pings = append(c.pings[:i], c.pings[i+1:]...)
			return
		}
	}
}

// Close sends a close frame with code and reason (cut to fit a control
// frame), waits up to CloseTimeout for the reader to see the peer's close
// or the end of the stream, then closes the connection. The reason is
// sent only as far as it is valid UTF-8.
func (c *Conn) Close(code StatusCode, reason string) error {
	c.wmu.Lock()
	err := c.sendCloseLocked(closePayload(code, reason))
	if err == nil && c.readFailed.Load() {
		// Failing the connection (RFC 6455 section 7.1.7): the stream
		// from the peer cannot be trusted to carry its answer, so the end
		// of ours follows the close frame. The reader reads on until the
		// peer closes too, so nothing it still sends turns into a reset
		// that could destroy the close frame on its way.
		if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	c.wmu.Unlock()
	if err == nil {
		c.waitReadEnd(CloseTimeout)
	}
	if cerr := c.CloseNow(); err == nil {
		err = cerr
	}
	return err
}

// sendCloseLocked writes a close frame with payload p unless one was sent
// already (ErrClosed); wmu is held. After it no data frame goes out.
func (c *Conn) sendCloseLocked(p []byte) error {
	if c.closeSent.Load() {
		return ErrClosed
	}
	c.closeSent.Store(true)
	return c.writeFrameLocked(opClose, p)
}

// closePayload is a close frame's payload: the code and as much of the
// reason as fits in 123 bytes without splitting a character.
func closePayload(code StatusCode, reason string) []byte {
	if code == StatusNoStatusRcvd || code == 0 {
		return nil
	}
	const room = maxControlPayload - 2
	if len(reason) > room {
		reason = reason[:room]
		for len(reason) > 0 && !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(p, reason...)
}

// waitReadEnd waits until reading has ended or d has passed.
func (c *Conn) waitReadEnd(d time.Duration) {
	c.mu.Lock()
	if c.readEnded {
		c.mu.Unlock()
		return
	}
	if c.ended == nil {
		c.ended = make(chan struct{})
	}
	ch := c.ended
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// endRead records that nothing more will be read and wakes a Close
// waiting for it.
func (c *Conn) endRead() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readEnded {
		c.readEnded = true
		if c.ended != nil {
			close(c.ended)
		}
	}
}

// CloseNow closes the connection at once, without a close handshake, and
// wakes any Ping waiting.
func (c *Conn) CloseNow() error {
	if c.closed.Swap(true) {
		return nil
	}
	err := c.nc.Close()
	c.mu.Lock()
	for _, w := range c.pings {
		w.err = net.ErrClosed
		close(w.done)
	}
	c.pings = nil
	c.mu.Unlock()
	return err
}
