package stompframe

// Default limits. STOMP 1.2 (Size Limits) lets a server bound frames as
// long as it tells the client with an ERROR frame; these bounds are far
// above what chat and game clients send and small enough that one
// session's partial frame costs little memory.
const (
	// DefaultMaxFrameSize is 64 KiB: a chat message or game state update
	// is a few hundred bytes. The WebSocket read limit must be at least
	// this (coder/websocket's default is 32 KiB).
	DefaultMaxFrameSize = 64 << 10
	// DefaultMaxHeaders is 64 header lines: a SEND from stomp.js carries
	// fewer than ten.
	DefaultMaxHeaders = 64
	// DefaultMaxHeaderLine is 4096 bytes, the header buffer size most
	// STOMP implementations use, enough for a JWT in a CONNECT header.
	DefaultMaxHeaderLine = 4096
	// MinFrameSize is the smallest MaxFrameSize wsserver accepts: a CONNECT
	// with accept-version, host, heart-beat, login and a passcode of a
	// few hundred bytes fits in 1 KiB; below it no client could connect.
	MinFrameSize = 1 << 10
	// MaxLimit bounds every limit: 1 GiB keeps offset arithmetic far from
	// overflow and no STOMP frame over WebSocket gets near it.
	MaxLimit = 1 << 30
)

// Limits bounds what a Decoder accepts. The zero value means the defaults.
type Limits struct {
	// MaxFrameSize is the largest frame accepted, in bytes on the wire:
	// command line, header lines, blank line, body and the NUL. Heart-beat
	// EOLs between frames do not count. Zero means DefaultMaxFrameSize.
	MaxFrameSize int
	// MaxHeaders is the most header lines one frame may have, repeated
	// names included. Zero means DefaultMaxHeaders.
	MaxHeaders int
	// MaxHeaderLine is the longest command or header line accepted, in
	// bytes without its EOL. Zero means DefaultMaxHeaderLine.
	MaxHeaderLine int
}

// WithDefaults returns a copy of l with its zero fields set to the
// defaults. Negative fields are kept, so that Validate still reports them.
func (l Limits) WithDefaults() Limits {
	if l.MaxFrameSize == 0 {
		l.MaxFrameSize = DefaultMaxFrameSize
	}
	if l.MaxHeaders == 0 {
		l.MaxHeaders = DefaultMaxHeaders
	}
	if l.MaxHeaderLine == 0 {
		l.MaxHeaderLine = DefaultMaxHeaderLine
	}
	return l
}

// Validate reports the first field that is negative or above MaxLimit,
// naming the field and its value ("stompframe: MaxFrameSize -1 is
// negative"). Zero fields are valid: they mean the defaults.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MaxFrameSize", l.MaxFrameSize},
		{"MaxHeaders", l.MaxHeaders},
		{"MaxHeaderLine", l.MaxHeaderLine},
	} {
		if f.v < 0 {
			return configErrorf("%s %d is negative", f.name, f.v)
		}
		if f.v > MaxLimit {
			return configErrorf("%s %d exceeds %d", f.name, f.v, MaxLimit)
		}
	}
	return nil
}

// sanitized returns l with defaults in place of zero or negative fields and
// every field clamped to MaxLimit, for constructors that cannot fail.
func (l Limits) sanitized() Limits {
	fix := func(v, def int) int {
		switch {
		case v <= 0:
			return def
		case v > MaxLimit:
			return MaxLimit
		}
		return v
	}
	return Limits{
		MaxFrameSize:  fix(l.MaxFrameSize, DefaultMaxFrameSize),
		MaxHeaders:    fix(l.MaxHeaders, DefaultMaxHeaders),
		MaxHeaderLine: fix(l.MaxHeaderLine, DefaultMaxHeaderLine),
	}
}
