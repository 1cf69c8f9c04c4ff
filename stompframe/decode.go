package stompframe

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// phase is where the Decoder stands in the frame it is reading.
type phase uint8

const (
	phaseIdle    phase = iota // between frames, skipping heart-beat EOLs
	phaseCommand              // reading the command line
	phaseHeaders              // reading header lines
	phaseBody                 // looking for the end of the body
)

// span locates one header line's name and value, as offsets from the
// first byte of the frame.
type span struct {
	name0, name1, val0, val1 int
	escaped                  bool // holds escape sequences to decode
}

// growChunk is how many bytes of a message the Decoder first copies behind
// an incomplete frame it holds. It doubles with the frame so far, which
// keeps copying linear without copying much past a frame's end.
const growChunk = 512

// Decoder turns the byte stream of one session's WebSocket messages (text
// or binary) into frames. A message may hold one frame, several, part of
// one, or bare EOL heart-beats; CRLF and LF line endings are both accepted;
// a content-length body may contain NUL. Header escapes are decoded per the
// version set with SetVersion (see the package documentation).
//
// The Decoder's outcome depends only on the bytes fed, never on how they
// were split into messages. It buffers at most one incomplete frame, which
// Limits.MaxFrameSize bounds, and reads each byte a bounded number of times
// however finely the input is split.
//
// Call Feed with a message, then Next until it returns (nil, nil). A
// Decoder is not safe for concurrent use.
type Decoder struct {
	lim     Limits
	version Version

	src      []byte // message being decoded; the caller's memory
	pos      int    // next byte of src not yet taken
	buf      []byte // owned copy of an incomplete frame: buf[boff:]
	boff     int    // start of the live bytes in buf
	borrowed int    // trailing bytes of buf copied from src (still in src[:pos])

	// State of the frame being read; offsets count from its first byte.
	ph        phase
	escapes   bool    // its headers are escaped
	fver      Version // version its headers are decoded with
	cmdEnd    int     // end of the command
	line      int     // start of the current line (command, header)
	scan      int     // bytes of the current line or body searched so far
	bodyStart int     // first body byte
	clen      int     // content-length, or -1
	spans     []span

	frame      Frame
	headers    []Header
	heartBeats uint64
	err        error
}

// NewDecoder returns a Decoder that enforces l. Zero fields of l take the
// defaults; so do negative ones (Limits.Validate reports them), and fields
// above MaxLimit are clamped. Header escapes are decoded per V12 until
// SetVersion says otherwise; the frames a session starts with, CONNECT or
// STOMP, are never escaped.
func NewDecoder(l Limits) *Decoder {
	return &Decoder{lim: l.sanitized(), version: V12, clen: -1}
}

// SetVersion sets the version whose escaping rules apply, typically the one
// negotiated from CONNECT. It takes effect from the next frame the Decoder
// starts reading.
func (d *Decoder) SetVersion(v Version) { d.version = v }

// Version returns the version set with SetVersion (V12 by default).
func (d *Decoder) Version() Version { return d.version }

// HeartBeats returns how many heart-beat EOLs (LF or CRLF outside a frame)
// the Decoder has seen.
func (d *Decoder) HeartBeats() uint64 { return d.heartBeats }

// Buffered returns how many bytes of an incomplete frame the Decoder holds
// in its own buffer. It stays at most Limits.MaxFrameSize+1 as long as each
// Feed follows a Next that returned (nil, nil).
func (d *Decoder) Buffered() int { return len(d.buf) - d.boff }

// Feed hands the Decoder the bytes of one WebSocket message. The Decoder
// may keep referring to p until Next returns (nil, nil); then it copies any
// incomplete tail it still needs into its own buffer, so the caller may
// reuse p after that. Feed after an error does nothing.
//
// Feed before Next has drained the previous message still works, but the
// undrained bytes are then copied into the Decoder's buffer, which Limits
// no longer bounds.
func (d *Decoder) Feed(p []byte) {
	if d.err != nil {
		return
	}
	if d.pos < len(d.src) {
		d.compact()
		d.buf = append(d.buf, d.src[d.pos:]...)
	}
	d.src, d.pos, d.borrowed = p, 0, 0
}

// Next returns the next complete frame, (nil, nil) when it needs more input,
// or an error, always a *ProtocolError, for malformed or oversize input.
// After an error the Decoder is unusable and Next returns the same error.
//
// The returned frame, its Headers slice and its Body, are valid only until
// the next call to Next or Feed; Body may alias the fed message. Header
// names and values are ordinary strings that stay valid.
func (d *Decoder) Next() (*Frame, error) {
	if d.err != nil {
		return nil, d.err
	}
	for {
		if d.Buffered() == 0 {
			// Decode straight from the caller's message.
			d.buf, d.boff, d.borrowed = d.buf[:0], 0, 0
			n, f, err := d.parse(d.src[d.pos:])
			if err != nil {
				return d.fail(err)
			}
			d.pos += n
			if f != nil {
				return f, nil
			}
			d.buf = append(d.buf, d.src[d.pos:]...)
			d.src, d.pos = nil, 0
			return nil, nil
		}

		// An incomplete frame is buffered: resume it.
		d.compact()
		n, f, err := d.parse(d.buf)
		if err != nil {
			return d.fail(err)
		}
		if f != nil {
			if rest := len(d.buf) - n; rest <= d.borrowed {
				// The bytes after the frame are still in src: read them
				// from there rather than through the buffer.
				d.pos -= rest
				d.buf, d.borrowed = d.buf[:0], 0
			} else {
				d.boff = n // the frame aliases buf: compact later
			}
			return f, nil
		}
		d.boff = n // skipped heart-beats
		d.borrowed = min(d.borrowed, d.Buffered())
		if d.Buffered() == 0 {
			continue
		}
		if d.pos == len(d.src) {
			d.src, d.pos, d.borrowed = nil, 0, 0
			return nil, nil
		}
		k := d.topUp()
		d.buf = append(d.buf, d.src[d.pos:d.pos+k]...)
		d.pos += k
		d.borrowed += k
	}
}

// compact moves the live bytes of buf to its front.
func (d *Decoder) compact() {
	if d.boff > 0 {
		n := copy(d.buf, d.buf[d.boff:])
		d.buf, d.boff = d.buf[:n], 0
	}
}

// topUp returns how many bytes of src to copy behind the buffered
// incomplete frame: what its content-length still needs, or a chunk that
// doubles with the frame, never more than one byte past the frame limit
// (plus one for a CR between frames whose LF has not come yet), and at
// least one.
func (d *Decoder) topUp() int {
	have := len(d.buf)
	want := max(growChunk, have)
	if d.ph == phaseBody && d.clen >= 0 {
		want = d.bodyStart + d.clen + 1 - have
	}
	want = min(want, d.lim.MaxFrameSize+2-have, len(d.src)-d.pos)
	return max(want, 1)
}

func (d *Decoder) fail(err *ProtocolError) (*Frame, error) {
	d.err = err
	d.src, d.buf, d.spans, d.headers = nil, nil, nil, nil
	d.frame = Frame{}
	return nil, err
}

// parse reads data, which starts at the first unread byte of the stream,
// resuming the frame in progress. It returns how many bytes it consumed
// and the frame when one is complete. With neither a frame nor an error it
// needs more input, and n counts the heart-beats it skipped: the frame in
// progress, if any, starts at data[n].
//
// parse looks at no more than Limits.MaxFrameSize bytes of a frame and at
// most MaxHeaderLine+2 bytes of a line, and decides each error from the
// bytes before the point where it occurs, so that its outcome never depends
// on where the input was split.
func (d *Decoder) parse(data []byte) (n int, f *Frame, perr *ProtocolError) {
	start := 0
	if d.ph == phaseIdle {
		for start < len(data) {
			c := data[start]
			if c == '\n' {
				start++
				d.heartBeats++
				continue
			}
			if c != '\r' {
				break
			}
			if start+1 == len(data) {
				return start, nil, nil // CR: its LF may follow
			}
			if data[start+1] != '\n' {
				return 0, nil, protocolError(ErrMalformed, "carriage return not followed by line feed between frames")
			}
			start += 2
			d.heartBeats++
		}
		if start == len(data) {
			return start, nil, nil
		}
		d.ph = phaseCommand
		d.fver = d.version
		d.line, d.scan, d.clen = 0, 0, -1
		d.spans = d.spans[:0]
	}

	fr := data[start:]
	over := len(fr) > d.lim.MaxFrameSize // the frame cannot fit
	if over {
		fr = fr[:d.lim.MaxFrameSize]
	}

	if d.ph == phaseCommand {
		end, next, done, err := d.nextLine(fr, over)
		if !done {
			return start, nil, err
		}
		cmd := fr[:end]
		if !isCommand(cmd) {
			if !utf8.Valid(cmd) {
				return 0, nil, protocolError(ErrInvalidUTF8, "the command line is not valid UTF-8")
			}
			return 0, nil, protocolError(ErrMalformed, "command must be upper-case letters A-Z")
		}
		d.cmdEnd = end
		d.escapes = d.fver >= V11 && !unescapedCommand(cmd)
		d.ph = phaseHeaders
		d.line, d.scan = next, 0
	}

	if d.ph == phaseHeaders {
		for {
			end, next, done, err := d.nextLine(fr, over)
			if !done {
				return start, nil, err
			}
			if end == d.line {
				d.bodyStart = next
				if err := d.checkUTF8(fr); err != nil {
					return 0, nil, err
				}
				break
			}
			if err := d.addHeader(fr[d.line:end]); err != nil {
				return 0, nil, err
			}
			d.line, d.scan = next, 0
		}
		if err := d.readContentLength(fr); err != nil {
			return 0, nil, err
		}
		d.ph = phaseBody
		d.scan = 0
	}

	// phaseBody
	var nul int
	if d.clen >= 0 {
		nul = d.bodyStart + d.clen // < MaxFrameSize, checked in readContentLength
		if nul >= len(fr) {
			return start, nil, nil
		}
		if fr[nul] != 0 {
			return 0, nil, protocolError(ErrMalformed, fmt.Sprintf("no NUL after the %d-byte body given by content-length", d.clen))
		}
	} else {
		from := d.bodyStart + d.scan
		i := bytes.IndexByte(fr[from:], 0)
		if i < 0 {
			d.scan = len(fr) - d.bodyStart
			if over {
				return 0, nil, d.tooLarge()
			}
			return start, nil, nil
		}
		nul = from + i
	}
	return start + nul + 1, d.finish(fr, nul), nil
}

// nextLine finds the end of the line starting at d.line in the frame fr.
// done is true when the line is complete: end is where its content ends
// (before CR LF or LF) and next is where the following line starts.
// Otherwise err says the line or the frame is too long, or, when nil, that
// more input is needed.
func (d *Decoder) nextLine(fr []byte, over bool) (end, next int, done bool, err *ProtocolError) {
	maxLine := d.lim.MaxHeaderLine
	// A line of maxLine content bytes has its LF at d.line+maxLine+1 at
	// the latest (after a CR); no need to look further.
	window := len(fr)
	if window-d.line > maxLine+1 {
		window = d.line + maxLine + 2
	}
	from := d.line + d.scan
	if i := bytes.IndexByte(fr[from:window], '\n'); i >= 0 {
		lf := from + i
		end = lf
		if end > d.line && fr[end-1] == '\r' {
			end--
		}
		if end-d.line > maxLine {
			return 0, 0, false, d.lineTooLong()
		}
		return end, lf + 1, true, nil
	}
	n := window - d.line
	d.scan = n
	// A trailing CR may be half of the EOL; any other byte is content.
	if n > maxLine+1 || (n == maxLine+1 && fr[window-1] != '\r') {
		return 0, 0, false, d.lineTooLong()
	}
	if over {
		return 0, 0, false, d.tooLarge()
	}
	return 0, 0, false, nil
}

// addHeader records one complete, non-empty header line.
func (d *Decoder) addHeader(line []byte) *ProtocolError {
	if len(d.spans) == d.lim.MaxHeaders {
		return protocolError(ErrTooManyHeaders, fmt.Sprintf("more than %d header lines", d.lim.MaxHeaders))
	}
	colon := bytes.IndexByte(line, ':')
	switch {
	case colon < 0:
		return protocolError(ErrMalformed, fmt.Sprintf("header line %d has no colon", len(d.spans)+1))
	case colon == 0:
		return protocolError(ErrMalformed, fmt.Sprintf("header line %d has an empty name", len(d.spans)+1))
	case bytes.IndexByte(line, '\r') >= 0:
		return protocolError(ErrMalformed, fmt.Sprintf("header line %d holds a carriage return", len(d.spans)+1))
	}
	escaped := false
	if d.escapes && bytes.IndexByte(line, '\\') >= 0 {
		escaped = true
		for _, part := range [2][]byte{line[:colon], line[colon+1:]} {
			if i := checkEscapes(part, d.fver); i >= 0 {
				seq := `\`
				if i+1 < len(part) {
					seq += string(part[i+1])
				}
				return protocolError(ErrBadEscape, fmt.Sprintf("header line %d holds %q, not an escape sequence of STOMP %s", len(d.spans)+1, seq, d.fver))
			}
		}
	}
	base := d.line
	d.spans = append(d.spans, span{
		name0: base, name1: base + colon,
		val0: base + colon + 1, val1: base + len(line),
		escaped: escaped,
	})
	return nil
}

// checkUTF8 rejects a header block that is not valid UTF-8. The command
// is A-Z and the EOLs are ASCII, so one pass over the lines between them
// checks every name and value; escapes decode to ASCII, so checking the
// raw bytes is enough. It runs once the whole block is in, which keeps the
// outcome independent of how the input was split.
func (d *Decoder) checkUTF8(fr []byte) *ProtocolError {
	if utf8.Valid(fr[d.cmdEnd:d.bodyStart]) {
		return nil
	}
	for i, s := range d.spans {
		if !utf8.Valid(fr[s.name0:s.val1]) {
			return protocolError(ErrInvalidUTF8, fmt.Sprintf("header line %d is not valid UTF-8", i+1))
		}
	}
	return protocolError(ErrInvalidUTF8, "the header block is not valid UTF-8")
}

// readContentLength sets d.clen from the first content-length header and
// rejects a frame that would exceed the limit before any of its body is
// read.
func (d *Decoder) readContentLength(fr []byte) *ProtocolError {
	d.clen = -1
	for _, s := range d.spans {
		if string(fr[s.name0:s.name1]) != "content-length" {
			continue
		}
		v := fr[s.val0:s.val1]
		if len(v) == 0 {
			return protocolError(ErrMalformed, "content-length is empty")
		}
		limit := int64(d.lim.MaxFrameSize)
		var n int64
		for _, c := range v {
			if c < '0' || c > '9' {
				return protocolError(ErrMalformed, "content-length is not a decimal number")
			}
			if n <= limit { // stop growing once too large: no overflow
				n = n*10 + int64(c-'0')
			}
		}
		if n > limit || int64(d.bodyStart)+n+1 > limit {
			claim := "more than " + strconv.FormatInt(limit, 10)
			if n <= limit {
				claim = strconv.FormatInt(n, 10)
			}
			return protocolError(ErrFrameTooLarge, fmt.Sprintf("content-length %s makes the frame larger than %d bytes", claim, limit))
		}
		d.clen = int(n)
		return nil
	}
	return nil
}

// finish builds the frame that ends with the NUL at fr[nul] and resets the
// state for the next frame. The header block becomes one string that the
// names and values share, so a frame without escapes costs one allocation
// (none without headers).
func (d *Decoder) finish(fr []byte, nul int) *Frame {
	hs := d.headers[:0]
	if len(d.spans) > 0 {
		first := d.spans[0].name0
		block := string(fr[first:d.spans[len(d.spans)-1].val1])
		for _, s := range d.spans {
			h := Header{Name: block[s.name0-first : s.name1-first], Value: block[s.val0-first : s.val1-first]}
			if s.escaped {
				h.Name, h.Value = unescape(h.Name), unescape(h.Value)
			}
			hs = append(hs, h)
		}
	}
	d.headers = hs
	d.frame = Frame{
		Command: commandString(fr[:d.cmdEnd]),
		Headers: hs,
		Body:    fr[d.bodyStart:nul:nul],
	}
	d.ph = phaseIdle
	return &d.frame
}

func (d *Decoder) lineTooLong() *ProtocolError {
	what := "command line"
	if d.ph == phaseHeaders {
		what = fmt.Sprintf("header line %d", len(d.spans)+1)
	}
	return protocolError(ErrHeaderLineTooLong, fmt.Sprintf("%s is longer than %d bytes", what, d.lim.MaxHeaderLine))
}

func (d *Decoder) tooLarge() *ProtocolError {
	return protocolError(ErrFrameTooLarge, fmt.Sprintf("frame is larger than %d bytes", d.lim.MaxFrameSize))
}

// isCommand reports whether b is a non-empty run of A-Z.
func isCommand(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return len(b) > 0
}

// unescapedCommand reports whether frames with this command never have
// their headers escaped.
func unescapedCommand(cmd []byte) bool {
	switch string(cmd) {
	case CommandConnect, CommandStomp, CommandConnected:
		return true
	}
	return false
}

// commandString returns cmd as a string, without allocating for the
// commands STOMP defines.
func commandString(cmd []byte) string {
	switch string(cmd) {
	case CommandSend:
		return CommandSend
	case CommandSubscribe:
		return CommandSubscribe
	case CommandUnsubscribe:
		return CommandUnsubscribe
	case CommandAck:
		return CommandAck
	case CommandNack:
		return CommandNack
	case CommandBegin:
		return CommandBegin
	case CommandCommit:
		return CommandCommit
	case CommandAbort:
		return CommandAbort
	case CommandDisconnect:
		return CommandDisconnect
	case CommandConnect:
		return CommandConnect
	case CommandStomp:
		return CommandStomp
	case CommandConnected:
		return CommandConnected
	case CommandMessage:
		return CommandMessage
	case CommandReceipt:
		return CommandReceipt
	case CommandError:
		return CommandError
	}
	return string(cmd)
}
