package server

import (
	"github.com/stompgate/stompgate/internal/wsconn"
)

// Compression defaults, each with the reason for its value.
const (
	// DefaultCompressionLevel is compress/flate's BestSpeed, the
	// cheapest per compression: it is paid once per broadcast, but per
	// delivery under context takeover and in rooms of a few. Level 6
	// writes 15 % fewer bytes on 4 KB game-state JSON (3.3 times fewer
	// than uncompressed against 2.8, BENCHMARKS.md), for deployments
	// that broadcast to many.
	DefaultCompressionLevel = 1
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
	// Level is the compress/flate level, 1 to 9. Zero means
	// DefaultCompressionLevel; other values are an error.
	Level int
	// MinSize is the payload size, in bytes, below which a WebSocket
	// message is sent uncompressed. Zero means
	// DefaultCompressionMinSize; negative compresses every message.
	MinSize int
	// ContextTakeover keeps a compressor per session for its whole
	// output, each message compressed with the ones before it as its
	// dictionary: 2.4 to 2.5 times fewer bytes on 400-byte chat messages
	// instead of 1.5 (BENCHMARKS.md), for a compressor held by every
	// session that negotiated it from its first compressed message on,
	// idle or not (1.15 MiB of heap at level 1), and one compression per
	// delivery instead of one per broadcast. Default false.
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
	return &wsconn.CompressionOptions{Level: c.Level, MinSize: c.MinSize, ContextTakeover: c.ContextTakeover}
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
	level := s.srv.cfg.Compression.Level
	if it.msg != nil {
		return it.msg.AppendDeflatedFrame(buf, it.sub, level), it.msg.Binary
	}
	return wsconn.AppendDeflated(buf, it.raw, level), false
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
