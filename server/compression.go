package server

import (
	"github.com/stompgate/stompgate/internal/wsconn"
)

// Compression defaults, each with the reason for its value.
const (
	// DefaultCompressionLevel is compress/flate's default level, chosen
	// by measurement: a broadcast is compressed once and shared, so at a
	// thousand subscribers per destination the level's CPU is spread
	// over a thousand deliveries. On 4 KB game-state JSON there, level
	// 6 wrote 3.3 times fewer bytes than uncompressed (level 1: 2.8, 4:
	// 3.1, 9: the same as 6) for the CPU of uncompressed delivery, since
	// fewer bytes to write pay for the compression (BENCHMARKS.md,
	// Compression). On 400-byte chat the level changes little (1.6 to
	// 1.65 times). Where a compression serves few deliveries (rooms of a
	// few, or context takeover, one compression per delivery) level 6
	// costs more than 1 per delivery; -compression-level trades back.
	DefaultCompressionLevel = 6
	// ownFrameLevel is the level of the frames a session compresses for
	// itself alone (CONNECTED, RECEIPT, ERROR, batches of MESSAGEs too
	// short to share) when context takeover is off: nothing shares them,
	// so the reason for Level does not hold, and compress/flate's levels
	// 2 to 9 clear 640 KiB of hash tables at each reset: 25 to 31 µs for
	// a 142-byte CONNECTED at level 6 against 17 to 22 µs at level 1,
	// for 2 bytes more.
	ownFrameLevel = 1
	// DefaultCompressionMinSize is the frame size, in bytes, below which
	// a WebSocket message goes out uncompressed: without context
	// takeover each message carries its own Huffman tables and block
	// headers, which eat what deflate saves on frames shorter than this.
	DefaultCompressionMinSize = 128
)

// Compression configures permessage-deflate (RFC 7692). The zero value
// negotiates nothing.
//
// By default the server compresses each message on its own and asks
// clients to do the same, so that a session holds no compressor or
// decompressor while idle, and a MESSAGE broadcast to many subscribers
// is compressed once, its compressed bytes shared as its encoding is
// (broker.Message.AppendDeflatedFrame). Inbound compressed messages
// inflate into at most Limits.MaxFrameSize bytes; one that would inflate
// beyond it closes the session with 1009.
type Compression struct {
	// Enabled accepts permessage-deflate from clients that offer it.
	// Default false: no extension is negotiated.
	Enabled bool
	// Level is the compress/flate level, 1 to 9, of the shared
	// encodings of MESSAGEs and, with ContextTakeover, of each
	// session's compressor (at least 2 there); a session's own frames
	// are compressed at level 1 otherwise. Zero means
	// DefaultCompressionLevel; other values are an error.
	Level int
	// MinSize is the payload size, in bytes, below which a WebSocket
	// message is sent uncompressed. Zero means
	// DefaultCompressionMinSize; negative compresses every message.
	MinSize int
	// ContextTakeover keeps a compressor per session for its whole
	// output, each message compressed with the ones before it as its
	// dictionary: 3.5 times fewer bytes on 400-byte chat messages in
	// rooms of 9 instead of 1.56 (BENCHMARKS.md), for a compressor held
	// by every session that negotiated it from its first compressed
	// message on (its CONNECTED frame), idle or not (0.8 MiB of heap,
	// 0.35 to 0.9 MiB of it resident), and one compression per delivery
	// instead of one per broadcast. The compressor runs at Level but at
	// least 2, compress/flate's fastest level that keeps a window.
	// Default false.
	ContextTakeover bool
}

// withDefaults checks c and fills its zero fields.
func (c Compression) withDefaults() (Compression, error) {
	switch {
	case c.Level == 0:
		c.Level = DefaultCompressionLevel
	case c.Level < 1 || c.Level > 9:
		return c, configErrorf("Compression.Level %d is not between 1 and 9", c.Level)
	}
	if c.MinSize == 0 {
		c.MinSize = DefaultCompressionMinSize
	}
	return c, nil
}

// acceptOptions is what wsconn.Accept is given for c: nil when off.
func (c *Compression) acceptOptions() *wsconn.CompressionOptions {
	if !c.Enabled {
		return nil
	}
	level := c.Level
	if !c.ContextTakeover {
		// The connection compresses only the session's own frames;
		// MESSAGEs go out shared, compressed at c.Level.
		level = ownFrameLevel
	}
	return &wsconn.CompressionOptions{Level: level, MinSize: c.MinSize, ContextTakeover: c.ContextTakeover}
}

// deflatedBatch reports whether a batch of items goes out as one
// message encoded by appendDeflatedItems: the connection takes shared
// compressed encodings and the batch holds a MESSAGE of at least
// MinSize bytes. Other batches go through WriteReserved, which
// compresses them on their own when they reach MinSize (with context
// takeover, every batch that does).
func (s *session) deflatedBatch(items []outItem) bool {
	if !s.conn.SharesDeflated() {
		return false
	}
	min := s.srv.cfg.Compression.MinSize
	for i := range items {
		if it := &items[i]; it.msg != nil && !it.close && frameLen(it) >= min {
			return true
		}
	}
	return false
}

// appendDeflatedItem appends the frame of it, not a close, to buf as a
// part of one permessage-deflate message without context takeover: a
// MESSAGE as its subscriber's lines stored and its shared compressed
// part, another frame compressed on its own. joined says buf already
// holds a part, which the new one must follow (wsconn.AppendSyncFlush).
// It reports whether the frame needs a binary message.
func (s *session) appendDeflatedItem(buf []byte, it *outItem, joined bool) ([]byte, bool) {
	if joined {
		buf = wsconn.AppendSyncFlush(buf)
	}
	if it.msg != nil {
		return it.msg.AppendDeflatedFrame(buf, it.sub, s.srv.cfg.Compression.Level), it.msg.Binary
	}
	return wsconn.AppendDeflated(buf, it.raw, ownFrameLevel), false
}

// appendDeflatedItems is appendItems for a deflated batch.
func (s *session) appendDeflatedItems(buf []byte, items []outItem) ([]byte, bool) {
	binary := false
	for i := range items {
		var b bool
		buf, b = s.appendDeflatedItem(buf, &items[i], i > 0)
		binary = binary || b
	}
	return buf, binary
}
