package broker

import (
	"strconv"
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

	headers []stompframe.Header
	body    []byte
	// tail holds the shared encoding per version, indexed by versionIndex;
	// filled by prepare on the publishing goroutine before the message is
	// handed to any subscriber.
	tail [3][]byte
}

// reserved are SEND headers the server sets itself or that describe the
// SEND rather than the message; they are not passed through.
func reserved(name string) bool {
	switch name {
	case "destination", "content-length", "receipt", "transaction",
		"message-id", "subscription", "ack":
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
		if !reserved(h.Name) {
			n++
		}
	}
	m := &Message{
		ID:          id,
		Destination: dest,
		Binary:      !utf8.Valid(f.Body),
		headers:     make([]stompframe.Header, 0, n),
	}
	for i, h := range f.Headers {
		if reserved(h.Name) || seenBefore(f.Headers[:i], h.Name) {
			continue
		}
		m.headers = append(m.headers, h)
	}
	m.body = append([]byte(nil), f.Body...)
	m.prepare(stompframe.V12)
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

// prepare encodes the shared part for v if it has not been yet.
func (m *Message) prepare(v stompframe.Version) {
	i := versionIndex(v)
	if m.tail[i] != nil {
		return
	}
	b := make([]byte, 0, 96+len(m.Destination)+len(m.ID)+len(m.body)+32*len(m.headers))
	b = stompframe.AppendHeader(b, "destination", m.Destination, v)
	b = stompframe.AppendHeaderRaw(b, "message-id", m.ID)
	for _, h := range m.headers {
		b = stompframe.AppendHeader(b, h.Name, h.Value, v)
	}
	b = append(b, "content-length:"...)
	b = strconv.AppendInt(b, int64(len(m.body)), 10)
	b = append(b, '\n', '\n')
	b = append(b, m.body...)
	b = append(b, 0)
	m.tail[i] = b
}

// AppendFrame appends the MESSAGE frame for sub to dst.
func (m *Message) AppendFrame(dst []byte, sub *Subscription) []byte {
	dst = append(dst, sub.head...)
	if sub.Ack != AckAuto && sub.Version >= stompframe.V12 {
		dst = append(dst, "ack:"...)
		dst = append(dst, m.ID...)
		dst = append(dst, '\n')
	}
	return append(dst, m.tail[versionIndex(sub.Version)]...)
}

// Size is an upper bound of the encoded MESSAGE frame for sub.
func (m *Message) Size(sub *Subscription) int {
	return len(sub.head) + 5 + len(m.ID) + len(m.tail[versionIndex(sub.Version)])
}
