package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/outcome"

	"github.com/stompgate/stompgate/stompframe"
)

// ending is how the server ends a session that it explains: an ERROR frame
// and then a close. Zero fields take the reason's own values.
type ending struct {
	reason  *outcome.Close
	kind    string              // bounded kind of problem, for the log (frame_too_large, permission)
	code    wsconn.StatusCode   // close code; zero: reason.Code()
	message string              // ERROR message header; empty: reason.Message()
	detail  string              // ERROR body
	receipt string              // receipt-id, when the offending frame asked for one
	headers []stompframe.Header // further ERROR headers
}

// fail queues e's ERROR frame and its close after everything already
// queued, unless the session is already ending; it reports whether it
// did. For outcome.CloseOutboundBudget what is queued is discarded first.
//
// The ERROR frame goes out in a text message, and its parts may carry
// client data (an echoed receipt id, a stage's message quoting a header):
// bytes that are not UTF-8 are replaced, so the frame never makes a
// browser drop the socket before it has read why.
func (s *session) fail(e ending) bool {
	code, msg := e.code, e.message
	if code == 0 {
		code = wsconn.StatusCode(e.reason.Code())
	}
	if msg == "" {
		msg = e.reason.Message()
	}
	msg, detail, receipt := validUTF8(msg), validUTF8(e.detail), validUTF8(e.receipt)
	f := stompframe.Frame{Command: stompframe.CommandError}
	f.Add("message", msg)
	if receipt != "" {
		f.Add("receipt-id", receipt)
	}
	for _, h := range e.headers {
		f.Add(validUTF8(h.Name), validUTF8(h.Value))
	}
	f.Add("content-type", "text/plain")
	if detail != "" {
		f.Add("content-length", fmt.Sprint(len(detail)))
		f.Body = []byte(detail)
	}
	s.mu.Lock()
	o := &s.box
	o.mu.Lock()
	if !o.endLocked(e.reason) {
		o.mu.Unlock()
		s.mu.Unlock()
		return false
	}
	s.kind = e.kind
	if e.reason == outcome.CloseOutboundBudget {
		o.releaseLocked()
	}
	// version is written under mu (onConnect) because fail also runs on
	// timer and shutdown goroutines.
	raw := stompframe.Append(nil, &f, s.version)
	p := o.pushLocked(outItem{raw: raw}, len(raw))
	o.pushLocked(outItem{close: true, code: code, reason: closeText(msg)}, 0)
	o.mu.Unlock()
	s.mu.Unlock()
	s.startWriter(p, nil)
	// A protocol violation or a credential failure is counted by its
	// kind here, once, for the end that actually happened.
	if e.reason == outcome.CloseProtocolError || e.reason == outcome.CloseAuthFailed {
		s.srv.cfg.Observer.ProtocolErrorClose(e.kind)
	}
	return true
}

// validUTF8 returns v with every byte sequence that is not UTF-8 replaced
// by U+FFFD; valid input is returned as it is, without copying.
func validUTF8(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return strings.ToValidUTF8(v, "\uFFFD")
}

// closeText fits msg into a WebSocket close reason (at most 123 bytes),
// cutting at a character boundary: the reason must be UTF-8 too.
func closeText(msg string) string {
	if len(msg) <= 120 {
		return msg
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut]
}
