package wsconn

import (
	"compress/flate"
	"errors"
	"io"
	"sync"
)

// deflateTail is what a sender strips from the end of each compressed
// message and a receiver appends before inflating it (RFC 7692 section
// 7.2.1): the empty stored block a sync flush ends with.
var deflateTail = [4]byte{0x00, 0x00, 0xff, 0xff}

// compression is a connection's negotiated permessage-deflate, nil when
// none was.
type compression struct {
	level   int
	minSize int
	// takeover, with ContextTakeover, is the connection's own compressor
	// and the buffer it writes into; guarded by the Conn's wmu. Nil:
	// messages are compressed with a pooled compressor each.
	takeoverOn bool
	takeover   *flate.Writer
	out        sliceWriter
}

// newCompression returns the compression of a connection that accepted
// an offer under o.
func newCompression(o CompressionOptions) *compression {
	z := &compression{level: o.Level, minSize: o.MinSize}
	if z.level < flate.BestSpeed || z.level > flate.BestCompression {
		z.level = DefaultCompressionLevel
	}
	if z.minSize == 0 {
		z.minSize = DefaultCompressionMinSize
	}
	if o.ContextTakeover {
		// Made at the first message compressed, not at the handshake.
		z.takeoverOn = true
		z.level = max(z.level, minTakeoverLevel)
	}
	return z
}

// minTakeoverLevel is the least level a connection's own compressor
// runs at. compress/flate's BestSpeed (level 1) looks for matches only in
// the block it compresses and the one before, not in a 32 KiB window,
// and every message ends a block with its sync flush: under context
// takeover, level 1 would use the message before and nothing older
// (2.5 times fewer bytes on 400-byte chat frames, against 3.3 at level 2
// for about the same CPU; BenchmarkDeflateRatio). Level 2 is the fastest
// that searches the whole window.
const minTakeoverLevel = 2

// sliceWriter appends what is written to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// deflaters pools compressors, one pool per level (1 to 9).
var deflaters [flate.BestCompression + 1]sync.Pool

// pooledDeflater is a pooled compressor and the writer it writes to.
type pooledDeflater struct {
	w   *flate.Writer
	out sliceWriter
}

// AppendDeflated appends p compressed as one permessage-deflate message
// without context takeover (RFC 7692 section 7.2.1: a sync-flushed
// deflate stream without its last four bytes) to dst and returns the
// extended slice. level is a compress/flate level from 1 to 9; others
// are DefaultCompressionLevel. The result can be written to any number of
// connections that negotiated permessage-deflate without context
// takeover (WriteDeflatedReserved): compress a broadcast once.
func AppendDeflated(dst, p []byte, level int) []byte {
	if level < flate.BestSpeed || level > flate.BestCompression {
		level = DefaultCompressionLevel
	}
	d, _ := deflaters[level].Get().(*pooledDeflater)
	if d == nil {
		d = &pooledDeflater{}
		d.w, _ = flate.NewWriter(&d.out, level) // level is valid
	}
	d.out.b = dst
	d.w.Reset(&d.out)
	_, _ = d.w.Write(p) // a sliceWriter does not fail
	_ = d.w.Flush()
	out := trimTail(d.out.b, len(dst))
	d.out.b = nil
	deflaters[level].Put(d)
	return out
}

// maxStored is the most bytes one stored deflate block holds (its LEN
// field is 16 bits).
const maxStored = 0xffff

// AppendStored appends p to dst as non-final stored (uncompressed)
// deflate blocks and returns the extended slice. Stored blocks end on a
// byte boundary, so AppendStored(head) followed by AppendDeflated(tail)
// is one valid permessage-deflate message of head+tail: the part of a
// frame that differs per connection (a STOMP MESSAGE's subscription
// header) travels stored, for 5 bytes, while the compressed rest is
// shared by every connection.
func AppendStored(dst, p []byte) []byte {
	for len(p) > 0 {
		n := min(len(p), maxStored)
		// BFINAL 0, BTYPE 00, padding to the byte: one zero byte; then
		// LEN and its ones' complement NLEN, little-endian.
		dst = append(dst, 0x00, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = append(dst, p[:n]...)
		p = p[n:]
	}
	return dst
}

// trimTail removes the sync flush's empty stored block from the end of
// b[from:], leaving a single 0x00 for an empty message (RFC 7692 section
// 7.2.3.6 allows either; one byte is what most peers send).
func trimTail(b []byte, from int) []byte {
	n := len(b)
	if n-from >= 4 && [4]byte(b[n-4:]) == deflateTail {
		b = b[:n-4]
	}
	if len(b) == from {
		b = append(b, 0x00)
	}
	return b
}

// deflateTakeover compresses p with the connection's own compressor, the
// messages before it as its dictionary, appending to dst; wmu is held.
func (z *compression) deflateTakeover(dst, p []byte) []byte {
	if z.takeover == nil {
		z.takeover, _ = flate.NewWriter(&z.out, z.level)
	}
	z.out.b = dst
	_, _ = z.takeover.Write(p)
	_ = z.takeover.Flush()
	out := trimTail(z.out.b, len(dst))
	z.out.b = nil
	return out
}

// inflaters pools decompressors. Clients are asked not to take context
// over (client_no_context_takeover), so each message inflates on its own
// and no connection keeps a decompressor between messages.
var inflaters sync.Pool

// pooledInflater is a pooled decompressor and the source it reads.
type pooledInflater struct {
	r   io.ReadCloser // a flate reader; also a flate.Resetter
	src inflateSource
}

// inflateSource reads a compressed message and then deflateTail. It is a
// flate.Reader (an io.ByteReader), so the decompressor reads exactly the
// message, with no buffer of its own.
type inflateSource struct {
	p    []byte
	tail int // bytes of deflateTail already read
}

func (s *inflateSource) ReadByte() (byte, error) {
	if len(s.p) > 0 {
		b := s.p[0]
		s.p = s.p[1:]
		return b, nil
	}
	if s.tail < len(deflateTail) {
		s.tail++
		return deflateTail[s.tail-1], nil
	}
	return 0, io.EOF
}

func (s *inflateSource) Read(b []byte) (int, error) {
	if len(s.p) > 0 {
		n := copy(b, s.p)
		s.p = s.p[n:]
		return n, nil
	}
	if s.tail < len(deflateTail) {
		n := copy(b, deflateTail[s.tail:])
		s.tail += n
		return n, nil
	}
	return 0, io.EOF
}

// errBadDeflate is the ProtocolError of a compressed message that is not
// a valid deflate stream.
var errBadDeflate = &ProtocolError{Code: StatusInvalidFramePayloadData, Text: "compressed message is not valid deflate data"}

// inflate decompresses the permessage-deflate message p into *out (a
// pooled buffer, emptied first), never holding more than limit+1
// decompressed bytes: a message that inflates past limit is
// ErrMessageTooBig, however small it was on the wire.
func inflate(out *[]byte, p []byte, limit int) error {
	z, _ := inflaters.Get().(*pooledInflater)
	if z == nil {
		z = &pooledInflater{}
	}
	z.src = inflateSource{p: p}
	if z.r == nil {
		z.r = flate.NewReader(&z.src)
	} else if err := z.r.(flate.Resetter).Reset(&z.src, nil); err != nil {
		return errBadDeflate
	}
	defer func() {
		z.src = inflateSource{}
		inflaters.Put(z)
	}()
	b := (*out)[:0]
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				*out = b
				return ErrMessageTooBig
			}
			nb := make([]byte, len(b), min(max(2*cap(b), ReadBufferSize), limit+1))
			copy(nb, b)
			b = nb
		}
		n, err := z.r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			*out = b
			return ErrMessageTooBig
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			// The stream ends at the appended empty block (a sync flush
			// is not final, so the decompressor then wants more input),
			// or at a final block the sender chose to end with. Message
			// bytes after a final block are no deflate data.
			*out = b
			if len(z.src.p) > 0 {
				return errBadDeflate
			}
			return nil
		default:
			*out = b
			return errBadDeflate
		}
	}
}

// AppendSyncFlush appends to dst, which ends with AppendDeflated's
// output, the four bytes of the sync flush that AppendDeflated leaves
// off (RFC 7692 section 7.2.1), so that further AppendStored or
// AppendDeflated output continues the same message: several frames,
// each compressed on its own or shared, sent as one message.
func AppendSyncFlush(dst []byte) []byte { return append(dst, deflateTail[:]...) }
