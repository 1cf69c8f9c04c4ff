package wsconn

import (
	"encoding/binary"
	"io"
	"sync"
	"time"
	"unicode/utf8"
)

// rsv1 is the first reserved bit of a frame's first byte: with
// permessage-deflate, "Per-Message Compressed" (RFC 7692 section 6).
const rsv1 = 0x40

// Opcodes (RFC 6455 section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

var readPool = sync.Pool{New: func() any {
	b := make([]byte, ReadBufferSize)
	return &b
}}

// maxPooledMessage is the largest assembled-message buffer kept for reuse;
// a rare large message must not leave large buffers behind.
const maxPooledMessage = 64 << 10

var msgPool = sync.Pool{New: func() any {
	b := make([]byte, 0, ReadBufferSize)
	return &b
}}

func protocolError(text string) error {
	return &ProtocolError{Code: StatusProtocolError, Text: text}
}

// ReadMessage returns the next data message, its fragments joined. The
// slice is valid until the next call. Pings are answered and pongs taken in
// on the way. A close frame from the peer completes the close handshake
// and returns a *CloseError; a violation of RFC 6455 returns a
// *ProtocolError; a message over the read limit returns ErrMessageTooBig;
// a text message that is not UTF-8 returns ErrInvalidUTF8, as soon as
// its first invalid byte arrives (a character cut between fragments is
// not invalid until the message ends without its last bytes).
//
// After any of those three the caller closes the connection with Close,
// from another goroutine, and calls ReadMessage once more: it reads on,
// skipping frames, until the peer answers the close frame or the stream
// ends (bounded by the read deadline), and returns the same error. Close
// waits for that, so a close frame sent to a peer still writing is not
// lost in a reset. Messages arriving after a close frame was sent are
// discarded too.
func (c *Conn) ReadMessage() (MessageType, []byte, error) {
	if c.failed != nil {
		return 0, nil, c.discard()
	}
	if c.msg != nil {
		putMsg(c.msg)
		c.msg = nil
	}
	if c.inflated != nil {
		putMsg(c.inflated)
		c.inflated = nil
	}
	var (
		typ        MessageType
		assembling bool
		compressed bool // the message being assembled is deflated
	)
	for {
		h, err := c.readHeader()
		if err != nil {
			return 0, nil, c.end(err)
		}
		switch {
		case h.n < 0:
			return 0, nil, c.fail(protocolError("payload length with the most significant bit set"), -1)
		case h.rsv&^rsv1 != 0:
			return 0, nil, c.fail(protocolError("reserved bits 2 or 3 set"), h.n)
		case h.rsv != 0 && c.z == nil:
			return 0, nil, c.fail(protocolError("reserved bits set with no extension negotiated"), h.n)
		case h.rsv != 0 && h.op != opText && h.op != opBinary:
			// RFC 7692 section 6: the "Per-Message Compressed" bit is
			// set on a message's first frame only, never on a control
			// frame or a continuation.
			return 0, nil, c.fail(protocolError("compressed bit on a control or continuation frame"), h.n)
		case !h.masked:
			return 0, nil, c.fail(protocolError("client frame not masked"), h.n)
		}
		if c.onFrame != nil {
			c.onFrame(h.n)
		}

		switch h.op {
		case opContinuation:
			if !assembling {
				return 0, nil, c.fail(protocolError("continuation frame with no message to continue"), h.n)
			}
		case opText, opBinary:
			if assembling {
				return 0, nil, c.fail(protocolError("new message before the previous one ended"), h.n)
			}
		case opClose, opPing, opPong:
			if !h.fin {
				return 0, nil, c.fail(protocolError("fragmented control frame"), h.n)
			}
			if h.n > maxControlPayload {
				return 0, nil, c.fail(protocolError("control frame payload over 125 bytes"), h.n)
			}
			if err := c.ensure(h.n); err != nil {
				return 0, nil, c.end(err)
			}
			p := (*c.in)[c.r : c.r+h.n]
			c.r += h.n
			unmask(h.key, 0, p)
			if err := c.control(h.op, p); err != nil {
				return 0, nil, err
			}
			continue
		default:
			return 0, nil, c.fail(protocolError("reserved opcode"), h.n)
		}

		// A data frame.
		have := 0
		if assembling {
			have = len(*c.msg)
		}
		if h.n > c.limit-have {
			return 0, nil, c.fail(ErrMessageTooBig, h.n)
		}
		if !assembling && h.fin && h.n <= ReadBufferSize {
			// The common case: a whole message in one frame that fits the
			// buffer is unmasked in place.
			if err := c.ensure(h.n); err != nil {
				return 0, nil, c.end(err)
			}
			p := (*c.in)[c.r : c.r+h.n]
			c.r += h.n
			unmask(h.key, 0, p)
			if c.closeSent.Load() {
				continue
			}
			if h.rsv != 0 {
				return c.inflated1(MessageType(h.op), p)
			}
			if h.op == opText && !utf8.Valid(p) {
				return 0, nil, c.fail(ErrInvalidUTF8, 0)
			}
			return MessageType(h.op), p, nil
		}
		if !assembling {
			typ, assembling, compressed = MessageType(h.op), true, h.rsv != 0
			c.msg = msgPool.Get().(*[]byte)
			*c.msg = (*c.msg)[:0]
			c.utf8Done = 0
		}
		// Messages that arrive after a close frame was sent are dropped
		// unread, so they are not checked. A compressed message is
		// checked once inflated.
		check := typ == MessageText && !compressed && !c.closeSent.Load()
		for pos := 0; pos < h.n; {
			if c.r == c.w {
				if err := c.fill(1); err != nil {
					return 0, nil, c.end(err)
				}
			}
			chunk := min(h.n-pos, c.w-c.r)
			start := len(*c.msg)
			c.growMsg(chunk)
			*c.msg = append(*c.msg, (*c.in)[c.r:c.r+chunk]...)
			unmask(h.key, pos, (*c.msg)[start:])
			pos += chunk
			c.r += chunk
			if check && !c.checkUTF8() {
				return 0, nil, c.fail(ErrInvalidUTF8, h.n-pos)
			}
		}
		if h.fin {
			if check && c.utf8Done < len(*c.msg) {
				// The message ends inside a character.
				return 0, nil, c.fail(ErrInvalidUTF8, 0)
			}
			if c.closeSent.Load() {
				putMsg(c.msg)
				c.msg, assembling = nil, false
				continue
			}
			if compressed {
				return c.inflated1(typ, *c.msg)
			}
			return typ, *c.msg, nil
		}
	}
}

// inflated1 returns the compressed message p of type typ inflated, into
// c.inflated, or fails reading: a message that inflates past the read
// limit is ErrMessageTooBig, data that is not deflate a ProtocolError
// with StatusInvalidFramePayloadData, and a text message that inflates
// to bytes that are not UTF-8 ErrInvalidUTF8. p's frames are all read.
func (c *Conn) inflated1(typ MessageType, p []byte) (MessageType, []byte, error) {
	c.inflated = msgPool.Get().(*[]byte)
	err := inflate(c.inflated, p, c.limit)
	if err == nil && typ == MessageText && !utf8.Valid(*c.inflated) {
		err = ErrInvalidUTF8
	}
	if err != nil {
		putMsg(c.inflated)
		c.inflated = nil
		return 0, nil, c.fail(err, 0)
	}
	return typ, *c.inflated, nil
}

// growMsg makes room for n more bytes in the message being assembled,
// doubling as bytes arrive but never past the read limit: a peer that
// stops one byte short of the limit holds at most the limit.
func (c *Conn) growMsg(n int) {
	b := *c.msg
	if len(b)+n <= cap(b) {
		return
	}
	nb := make([]byte, len(b), min(max(2*cap(b), len(b)+n), c.limit))
	copy(nb, b)
	*c.msg = nb
}

// frameHeader is a parsed frame header (RFC 6455 section 5.2).
type frameHeader struct {
	fin    bool
	rsv    byte // the three reserved bits
	op     byte
	masked bool
	n      int // payload length; -1 when it has the most significant bit set
	key    [4]byte
}

// readHeader reads and consumes the next frame header.
func (c *Conn) readHeader() (frameHeader, error) {
	if err := c.ensure(2); err != nil {
		return frameHeader{}, err
	}
	b := (*c.in)[c.r:c.w]
	h := frameHeader{fin: b[0]&0x80 != 0, rsv: b[0] & 0x70, op: b[0] & 0x0f, masked: b[1]&0x80 != 0}
	n := int(b[1] & 0x7f)
	hl := 2
	switch n {
	case 126:
		hl = 4
	case 127:
		hl = 10
	}
	if h.masked {
		hl += 4
	}
	if err := c.ensure(hl); err != nil {
		return frameHeader{}, err
	}
	b = (*c.in)[c.r:c.w]
	switch n {
	case 126:
		n = int(binary.BigEndian.Uint16(b[2:]))
	case 127:
		n = -1
		if u := binary.BigEndian.Uint64(b[2:]); u>>63 == 0 {
			// Lengths past what an int holds are over any limit anyway.
			n = int(min(u, 1<<62))
		}
	}
	h.n = n
	if h.masked {
		copy(h.key[:], b[hl-4:hl])
	}
	c.r += hl
	return h, nil
}

// control handles a ping, pong or close frame from the peer.
func (c *Conn) control(op byte, p []byte) error {
	switch op {
	case opPing:
		// The pong goes out when the bytes read so far are handled, for
		// the latest ping only (RFC 6455 section 5.5.3 allows it): a
		// peer that packs a thousand pings into one write gets one pong,
		// not a thousand writes.
		c.pongDue = append(c.pongDue[:0], p...)
		c.pongOwed = true
	case opPong:
		c.pong(p)
	case opClose:
		code, reason, err := parseClose(p)
		if err != nil {
			return c.fail(err, 0)
		}
		// The echo carries the peer's code (none if it sent none); one
		// sent already, as the answer awaited here, is not repeated.
		c.wmu.Lock()
		_ = c.sendCloseLocked(closePayload(code, ""))
		c.wmu.Unlock()
		// The server closes the TCP connection first (RFC 6455 section
		// 7.1.1).
		_ = c.CloseNow()
		return c.end(&CloseError{Code: code, Reason: reason})
	}
	return nil
}

// parseClose reads a close frame's payload (RFC 6455 section 5.5.1).
func parseClose(p []byte) (StatusCode, string, error) {
	switch len(p) {
	case 0:
		return StatusNoStatusRcvd, "", nil
	case 1:
		return 0, "", protocolError("close payload of one byte")
	}
	code := StatusCode(binary.BigEndian.Uint16(p))
	if !validWireCode(code) {
		return 0, "", protocolError("close status code not allowed on the wire")
	}
	if !utf8.Valid(p[2:]) {
		return 0, "", &ProtocolError{Code: StatusInvalidFramePayloadData, Text: "close reason is not UTF-8"}
	}
	return code, string(p[2:]), nil
}

// validWireCode reports whether a close frame may carry code (RFC 6455
// section 7.4 and the IANA registry).
func validWireCode(code StatusCode) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// fail records err as the end of parsing and returns it. skip is the
// length of the offending frame's payload, still unread, or -1 when the
// frame's end is unknown and the stream cannot be followed any further.
func (c *Conn) fail(err error, skip int) error {
	c.failed = err
	c.skip = skip
	c.readFailed.Store(true)
	if c.msg != nil {
		putMsg(c.msg)
		c.msg = nil
	}
	return err
}

// end records err as the end of reading: nothing more will be read.
func (c *Conn) end(err error) error {
	if c.failed == nil {
		c.failed = err
	}
	c.release()
	c.endRead()
	return err
}

// discard reads on after a failure until the peer's close frame, the end
// of the stream or the read deadline. While frames can still be told
// apart it skips them looking for the close; after that it reads and
// drops bytes.
func (c *Conn) discard() error {
	c.mu.Lock()
	ended := c.readEnded
	c.mu.Unlock()
	if ended {
		return c.failed
	}
	for c.skip >= 0 {
		for c.skip > 0 {
			if c.r == c.w {
				if err := c.fill(1); err != nil {
					c.end(err)
					return c.failed
				}
			}
			k := min(c.skip, c.w-c.r)
			c.r += k
			c.skip -= k
		}
		h, err := c.readHeader()
		if err != nil {
			c.end(err)
			return c.failed
		}
		if h.op == opClose {
			// The peer's answer to the close frame sent after the
			// failure: the server closes the TCP connection first.
			_ = c.CloseNow()
			c.end(c.failed)
			return c.failed
		}
		c.skip = h.n
	}
	c.release()
	var sink [512]byte
	for {
		if _, err := c.nc.Read(sink[:]); err != nil {
			break
		}
	}
	c.endRead()
	return c.failed
}

// release hands the buffers back to their pools.
func (c *Conn) release() {
	if c.in != nil {
		readPool.Put(c.in)
		c.in, c.r, c.w = nil, 0, 0
	}
	if c.msg != nil {
		putMsg(c.msg)
		c.msg = nil
	}
	if c.inflated != nil {
		putMsg(c.inflated)
		c.inflated = nil
	}
	c.stash = nil
}

func putMsg(b *[]byte) {
	if cap(*b) <= maxPooledMessage {
		*b = (*b)[:0]
		msgPool.Put(b)
	}
}

// ensure makes at least k unread bytes available in (*c.in)[c.r:c.w];
// k is at most ReadBufferSize.
func (c *Conn) ensure(k int) error {
	for c.in == nil || c.w-c.r < k {
		if err := c.fill(k); err != nil {
			return err
		}
	}
	return nil
}

// fill reads more bytes, leaving room for k unread bytes from c.r.
func (c *Conn) fill(k int) error {
	if c.pongOwed {
		c.pongOwed = false
		// The pong may wait on a peer that does not read: what the
		// caller holds back must not wait with it.
		if c.beforeWait != nil {
			c.beforeWait()
		}
		// An answer that cannot be written shows up as the next read's
		// or write's error; a peer that pings without reading meets the
		// socket's backpressure here.
		_ = c.writeControl(opPong, c.pongDue)
	}
	if c.in == nil {
		c.take()
		if c.w > 0 {
			// Bytes kept from before were enough to go on with.
			return nil
		}
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if len(*c.in)-c.r < k {
		c.w = copy(*c.in, (*c.in)[c.r:c.w])
		c.r = 0
	}
	if c.rc == nil {
		// With no descriptor to try without waiting, any read may wait.
		if c.beforeWait != nil {
			c.beforeWait()
		}
		n, err := c.nc.Read((*c.in)[c.w:])
		c.w += n
		if n > 0 {
			c.readAt = time.Now()
			return nil
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	c.readErr = nil
	if err := c.rc.Read(c.readFn); err != nil {
		return err
	}
	return c.readErr
}

// take borrows a pooled buffer and puts back in front any stashed bytes.
func (c *Conn) take() {
	c.in = readPool.Get().(*[]byte)
	c.r, c.w = 0, copy(*c.in, c.stash)
	c.stash = nil
}

// unmask applies a frame's masking key to b, the payload bytes from
// offset pos on.
func unmask(key [4]byte, pos int, b []byte) {
	if s := pos & 3; s != 0 {
		key = [4]byte{key[s], key[(s+1)&3], key[(s+2)&3], key[(s+3)&3]}
	}
	k32 := uint64(binary.LittleEndian.Uint32(key[:]))
	k64 := k32 | k32<<32
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^k64)
	}
	for ; i < len(b); i++ {
		b[i] ^= key[i&3]
	}
}
