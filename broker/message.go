package broker

import (
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/stompgate/stompgate/stompframe"
)

// Message is one published message, encoded once and shared by every
// subscriber's queue. The part of a MESSAGE frame that is the same for all
// subscribers (destination, message-id, content-type, user headers,
// content-length, body) is encoded once per STOMP version in use; only the
// short subscription (and ack) header lines are written per subscriber.
//
// A Message is immutable once published; build it with NewMessage.
type Message struct {
	// ID is the message-id header value.
	ID string
	// Destination is where the message was sent.
	Destination string
	// Binary is true when the body is not valid UTF-8, so it must travel
	// in a binary WebSocket message.
	Binary bool
	// Trace is the W3C traceparent of a message the server chose to
	// trace (see TraceHeader), set before it is published; empty for
	// the others. It travels to other instances and to the backend, and
	// is never written into a MESSAGE frame.
	Trace string

	headers []stompframe.Header
	body    []byte
	// tail holds the shared encoding per version, indexed by versionIndex;
	// filled by prepare on the publishing goroutine before the message is
	// handed to any subscriber. A message built by NewMessage keeps its
	// body inside the V12 tail rather than in a copy of its own.
	tail [3][]byte
	// hbuf holds the headers of a message that has few of them, so that
	// building it does not allocate a slice for them.
	hbuf [4]stompframe.Header

	// zmu serializes the compression of a tail (see deflated); ztail
	// holds the compressed tail per version, indexed by versionIndex,
	// nil until a connection that shares compressed encodings asks for
	// it. Written once under zmu, read without it.
	zmu   sync.Mutex
	ztail [3]atomic.Pointer[[]byte]

	// path and arrived are how and when the message reached the server,
	// queued when Publish began handing it to subscribers (Unix
	// nanoseconds; 0: not timed). See SetArrival.
	path            string
	arrived, queued int64
}

// Reserved reports the SEND headers the server sets itself or that
// describe the SEND rather than the message; NewMessage does not pass
// them through, and a relay refuses a payload that carries one. "token"
// carries the sender's refreshed credentials (see
// interceptor.PrincipalStage), which no subscriber may see; the next four
// are a history's position and recovery outcome (package history), which
// the server alone sets on a MESSAGE, so a client cannot forge them;
// TraceHeader is the server's sampling decision (Message.Trace), which a
// client must not make for it.
func Reserved(name string) bool {
	switch name {
	case "destination", "content-length", "receipt", "transaction",
		"message-id", "subscription", "ack", "token",
		"x-stream-offset", "x-stream-epoch", "recovered", "recovery-reason",
		TraceHeader:
		return true
	}
	return false
}

// NewMessage builds a message from a SEND frame. It copies what it keeps,
// so f may be reused afterwards. User headers pass through, first
// occurrence only (STOMP 1.2 "Repeated Header Entries").
func NewMessage(id string, f *stompframe.Frame) *Message {
	dest := f.Get("destination")
	n := 0
	for _, h := range f.Headers {
		if !Reserved(h.Name) {
			n++
		}
	}
	m := &Message{
		ID:          id,
		Destination: dest,
		Binary:      !utf8.Valid(f.Body),
	}
	m.headers = m.hbuf[:0]
	if n > len(m.hbuf) {
		m.headers = make([]stompframe.Header, 0, n)
	}
	for i, h := range f.Headers {
		if Reserved(h.Name) || seenBefore(f.Headers[:i], h.Name) {
			continue
		}
		m.headers = append(m.headers, h)
	}
	// The V12 encoding ends with the body and its NUL: keep that copy of
	// the body instead of making a second one.
	m.body = f.Body
	m.prepare(stompframe.V12)
	t := m.tail[versionIndex(stompframe.V12)]
	end := len(t) - 1
	m.body = t[end-len(f.Body) : end : end]
	return m
}

// NewMessageParts builds a message from its parts, for a relay that
// receives messages published elsewhere. headers must not contain
// reserved names; they are not copied.
func NewMessageParts(id, dest string, headers []stompframe.Header, body []byte) *Message {
	m := &Message{ID: id, Destination: dest, Binary: !utf8.Valid(body), headers: headers, body: body}
	m.prepare(stompframe.V12)
	return m
}

// Redirected returns a copy of m addressed to dest, sharing m's id,
// headers and body, for one subscriber that is shown another destination
// than the one it was published to (a user destination). Nothing is
// encoded ahead: AppendFrame writes the copy straight into the
// subscriber's buffer.
func (m *Message) Redirected(dest string) *Message {
	r := &Message{ID: m.ID, Destination: dest, Binary: m.Binary, headers: m.headers, body: m.body}
	return r.KeepArrival(m)
}

// Headers returns the passed-through headers (not a copy; do not modify).
func (m *Message) Headers() []stompframe.Header { return m.headers }

// Body returns the body (not a copy; do not modify).
func (m *Message) Body() []byte { return m.body }

func seenBefore(hs []stompframe.Header, name string) bool {
	for _, h := range hs {
		if h.Name == name {
			return true
		}
	}
	return false
}

func versionIndex(v stompframe.Version) int {
	switch v {
	case stompframe.V10:
		return 0
	case stompframe.V11:
		return 1
	}
	return 2
}

// tailSlack is room for escapes beyond the unescaped length of a tail:
// sizing a tail exactly would scan every header for bytes to escape twice,
// once to count and once to write.
const tailSlack = 8

// prepare encodes the shared part for v if it has not been yet. A tail
// whose escapes overflowed the slack is copied to its exact size, so a
// queued message never holds much more memory than the outbound bounds
// count for it.
func (m *Message) prepare(v stompframe.Version) {
	i := versionIndex(v)
	if m.tail[i] != nil {
		return
	}
	n := m.tailLen(stompframe.V10) // V10 escapes nothing
	t := m.appendTail(make([]byte, 0, n+tailSlack), v)
	if cap(t) > len(t)+tailSlack {
		t = append(make([]byte, 0, len(t)), t...)
	}
	m.tail[i] = t
}

// appendTail appends the part of the MESSAGE frame that is the same for
// every subscriber of version v: the headers after subscription (and
// ack), the blank line, the body and the NUL.
func (m *Message) appendTail(b []byte, v stompframe.Version) []byte {
	b = stompframe.AppendHeader(b, "destination", m.Destination, v)
	b = stompframe.AppendHeaderRaw(b, "message-id", m.ID)
	for _, h := range m.headers {
		b = stompframe.AppendHeader(b, h.Name, h.Value, v)
	}
	b = stompframe.AppendContentLength(b, len(m.body))
	b = append(b, '\n')
	b = append(b, m.body...)
	return append(b, 0)
}

// tailLen returns the length of appendTail's output for v.
func (m *Message) tailLen(v stompframe.Version) int {
	n := headerLen("destination", m.Destination, v) + len("message-id:\n") + len(m.ID)
	for _, h := range m.headers {
		n += headerLen(h.Name, h.Value, v)
	}
	n += len("content-length:\n\n") + decimalLen(len(m.body))
	return n + len(m.body) + 1
}

// headerLen returns the length of the header line stompframe.AppendHeader
// writes for name, value and v.
func headerLen(name, value string, v stompframe.Version) int {
	return stompframe.EscapedLen(name, v) + 1 + stompframe.EscapedLen(value, v) + 1
}

// decimalLen returns the number of decimal digits of n >= 0.
func decimalLen(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// AppendFrame appends the MESSAGE frame for sub to dst. The shared part
// is copied from the encoding Publish prepared for sub's version; for a
// version the message was not published to, it is encoded into dst.
func (m *Message) AppendFrame(dst []byte, sub *Subscription) []byte {
	dst = append(dst, sub.head...)
	if sub.Ack != AckAuto && sub.Version >= stompframe.V12 {
		dst = append(dst, "ack:"...)
		dst = append(dst, m.ID...)
		dst = append(dst, '\n')
	}
	if t := m.tail[versionIndex(sub.Version)]; t != nil {
		return append(dst, t...)
	}
	return m.appendTail(dst, sub.Version)
}

// Size is an upper bound of the encoded MESSAGE frame for sub.
func (m *Message) Size(sub *Subscription) int {
	n := len(sub.head) + len("ack:\n") + len(m.ID)
	if t := m.tail[versionIndex(sub.Version)]; t != nil {
		return n + len(t)
	}
	return n + m.tailLen(sub.Version)
}

// messageOverhead approximates what a Message holds beyond its encoded
// bytes: the struct with its inline header array, the slice and string
// headers of its id and destination.
const messageOverhead = 256

// MemSize is an estimate of the memory m holds: its shared encodings,
// compressed ones included, plus a fixed overhead for the struct. A
// session's bound on the SENDs its open transactions hold is in these
// bytes. Its outbound queue counts Size, the uncompressed bytes of each
// frame: a compressed tail is made only once a message is queued, is
// shared like the tail, and is at most a few bytes longer than it, so a
// queued message holds at most about twice what it is counted for.
func (m *Message) MemSize() int {
	n := messageOverhead + len(m.ID) + len(m.Destination)
	for i, t := range m.tail {
		n += cap(t)
		if z := m.ztail[i].Load(); z != nil {
			n += cap(*z)
		}
	}
	return n
}
