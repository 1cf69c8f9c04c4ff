package relay

import (
	"encoding/binary"
	"time"
	"unicode/utf8"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/lenfield"
	"github.com/stompgate/stompgate/stompframe"
)

// wireVersion is the first byte of every payload. A receiver drops (and
// counts as malformed) payloads of a version it does not know, so a rolling
// upgrade that changes the format loses messages between old and new
// instances instead of misreading them. Version 2 added the envelope
// (Signer) and left the message-id to the receiving instance.
const wireVersion = 2

// maxWireHeaders bounds the header count a payload may claim, so that a
// corrupt count cannot make the decoder allocate a huge slice. It is far
// above stompframe's default limit of 64 headers per frame.
const maxWireHeaders = 1024

// appendMessage appends the wire encoding of m, published by the instance
// inst at now and sealed by s (nil: unsigned), to dst. The format is
// documented in doc.go.
func appendMessage(dst []byte, s *Signer, now time.Time, inst string, m *broker.Message) []byte {
	dst = append(dst, wireVersion)
	dst, start := s.begin(dst, now)
	dst = appendString(dst, inst)
	dst = appendString(dst, m.Destination)
	hs := m.Headers()
	n := len(hs)
	if m.Trace != "" {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for _, h := range hs {
		dst = appendString(dst, h.Name)
		dst = appendString(dst, h.Value)
	}
	if m.Trace != "" {
		dst = appendString(dst, broker.TraceHeader)
		dst = appendString(dst, m.Trace)
	}
	dst = append(dst, m.Body()...)
	return s.finish(dst, start)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// wireMessage is a decoded payload. Its strings share the payload's
// memory; body is a copy. It carries no message-id: the receiving
// instance assigns one, so that no one who can write to Redis chooses
// the id a subscriber sees.
type wireMessage struct {
	instance string
	dest     string
	headers  []stompframe.Header
	trace    string // broker.Message.Trace; "" when none or not valid
	body     []byte
}

// decodeMessage decodes a payload received at now and checks its
// envelope with s. When the instance is skip, it stops after the
// instance id, before checking the mac, and returns with only instance
// set: a relay drops its own messages without decoding the rest. A
// payload refused returns its reason (a Drop value); "" means decoded.
func decodeMessage(p, skip string, s *Signer, now time.Time) (wireMessage, string) {
	return decodeMessageWithin(p, skip, s, now, 0)
}

// decodeMessageWithin is decodeMessage with the signature's age bound
// maxAge (Signer.openWithin); an empty skip skips nothing.
func decodeMessageWithin(p, skip string, s *Signer, now time.Time, maxAge time.Duration) (wireMessage, string) {
	var w wireMessage
	if len(p) == 0 || p[0] != wireVersion {
		return w, DropMalformed
	}
	env := p[1:]
	if inst, ok := peekInstance(env); !ok {
		return w, DropMalformed
	} else if skip != "" && inst == skip {
		w.instance = inst
		return w, ""
	}
	body, reason := s.openWithin(env, now, maxAge)
	if reason != "" {
		return w, reason
	}
	d := lenfield.Reader{S: body}
	w.instance = d.String()
	w.dest = d.String()
	n := d.Uvarint()
	if d.Bad || n > maxWireHeaders || !utf8.ValidString(w.dest) {
		return w, DropMalformed
	}
	if n > 0 {
		w.headers = make([]stompframe.Header, 0, n)
		for range n {
			h := stompframe.Header{Name: d.String(), Value: d.String()}
			if h.Name == broker.TraceHeader {
				if w.trace == "" && broker.ValidTrace(h.Value) {
					w.trace = h.Value
				}
				continue
			}
			// Every instance sends what stompframe or the server API
			// accepted, which is UTF-8; a header that is not would reach
			// clients in a text message, which browsers refuse whole.
			if broker.Reserved(h.Name) || !utf8.ValidString(h.Name) || !utf8.ValidString(h.Value) {
				return w, DropMalformed
			}
			w.headers = append(w.headers, h)
		}
	}
	if d.Bad {
		return w, DropMalformed
	}
	w.body = []byte(d.S)
	return w, ""
}

// peekInstance returns the instance id of an envelope without checking
// its mac.
func peekInstance(env string) (string, bool) {
	if len(env) == 0 {
		return "", false
	}
	d := lenfield.Reader{S: env[1:]}
	if env[0] == envSigned {
		if len(d.S) < macLen {
			return "", false
		}
		d.S = d.S[macLen:]
	}
	d.Uvarint()
	inst := d.String()
	return inst, !d.Bad
}
