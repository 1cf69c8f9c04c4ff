package server

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stompgate/stompgate/internal/wsconn"

	"github.com/stompgate/stompgate/stompframe"
)

// CloseReason says why a session ended. Each reason is defined once,
// below, with everything that depends on it: the bounded label it is
// counted and logged under (stompgate_sessions_closed_total{reason}), the
// WebSocket close code the client sees, and the ERROR frame's message
// header for a reason the server explains. The session, metrics and logs
// all read these values; adding a reason is one line here.
//
// A CloseReason is immutable; compare reasons by pointer.
type CloseReason struct {
	label   string
	code    wsconn.StatusCode
	message string
}

// String returns the label, a short snake_case word from a fixed set.
func (r *CloseReason) String() string { return r.label }

// Code is the WebSocket close code sent with the close; zero for a reason
// that ends the connection without a close handshake (the peer is gone
// or not reading).
func (r *CloseReason) Code() wsconn.StatusCode { return r.code }

// Message is the ERROR frame's message header sent before the close, or
// empty when the reason sends no ERROR or the message depends on the
// frame (protocol errors, a stage's rejection).
func (r *CloseReason) Message() string { return r.message }

// closeReasons holds every reason in definition order.
var closeReasons []*CloseReason

func defineClose(label string, code wsconn.StatusCode, message string) *CloseReason {
	r := &CloseReason{label: label, code: code, message: message}
	closeReasons = append(closeReasons, r)
	return r
}

// CloseReasons returns every CloseReason, in the order defined, so that a
// metrics adapter can resolve a counter for each once.
func CloseReasons() []*CloseReason { return append([]*CloseReason(nil), closeReasons...) }

// The close reasons.
var (
	// CloseNormal: DISCONNECT, or a clean close by the client.
	CloseNormal = defineClose("normal", wsconn.StatusNormalClosure, "")
	// CloseProtocolError: an ERROR for a frame the server could not
	// accept, or a stage rejected it (permission); the message names the
	// problem.
	CloseProtocolError = defineClose("protocol_error", wsconn.StatusPolicyViolation, "")
	// CloseSlowConsumer: the outbound queue was full; queued frames are
	// discarded and the close follows without an ERROR.
	CloseSlowConsumer = defineClose("slow_consumer", wsconn.StatusPolicyViolation, "slow consumer")
	// CloseHeartBeat: the client was silent past the negotiated
	// heart-beat interval plus tolerance; the connection is dropped.
	CloseHeartBeat = defineClose("heartbeat_timeout", 0, "")
	// CloseConnectTimeout: no CONNECT in time after the upgrade.
	CloseConnectTimeout = defineClose("connect_timeout", wsconn.StatusPolicyViolation, "CONNECT timeout")
	// CloseAuthFailed: missing, invalid or expired credentials.
	CloseAuthFailed = defineClose("auth_failed", wsconn.StatusPolicyViolation, "")
	// CloseRateLimitAbuse: the session kept flooding past its limit, or
	// its principal is banned for doing so.
	CloseRateLimitAbuse = defineClose("rate_limit_abuse", wsconn.StatusPolicyViolation, "rate limit exceeded")
	// CloseShutdown: the server is shutting down or draining.
	CloseShutdown = defineClose("shutdown", wsconn.StatusGoingAway, "server shutting down")
	// ClosePanic: a panic was recovered while serving the session.
	ClosePanic = defineClose("panic", wsconn.StatusInternalError, "internal error")
	// CloseClientGone: the connection broke without a clean close.
	CloseClientGone = defineClose("client_gone", 0, "")
	// CloseTokenExpired: the credentials the session was opened with
	// expired and no newer ones arrived.
	CloseTokenExpired = defineClose("token_expired", wsconn.StatusPolicyViolation, "token expired")
	// CloseControlFlood: more control frames (SUBSCRIBE, UNSUBSCRIBE,
	// BEGIN, COMMIT, ABORT, frames asking for a receipt) than the
	// session's budget.
	CloseControlFlood = defineClose("control_flood", wsconn.StatusPolicyViolation, "too many control frames")
	// ClosePingTimeout: a session that negotiated no STOMP heart-beat did
	// not answer a WebSocket ping within the timeout; the connection is
	// dropped.
	ClosePingTimeout = defineClose("ping_timeout", 0, "")
	// CloseSessionCap: a stage refused CONNECT because the principal
	// already holds its maximum number of sessions.
	CloseSessionCap = defineClose("session_cap", wsconn.StatusPolicyViolation, "too many sessions")
	// CloseBackendError: the AppHandler did not take an app message (see
	// AppHandler).
	CloseBackendError = defineClose("backend_error", wsconn.StatusTryAgainLater, "backend unavailable")
	// CloseAppBacklog: the AppHandler refused an app message because the
	// backend has not taken earlier ones (see AppBacklogError).
	CloseAppBacklog = defineClose("app_backlog", wsconn.StatusTryAgainLater, "backend busy")
	// CloseDisconnected: the program ended the session (Server.Disconnect,
	// the HTTP API's disconnect).
	CloseDisconnected = defineClose("disconnected", wsconn.StatusPolicyViolation, "disconnected by the server")
	// CloseOutboundBudget: the server's outbound queues together went
	// over Config.OutboundTotalBytes and this session held one of the
	// largest; its queue is discarded before the ERROR.
	CloseOutboundBudget = defineClose("outbound_budget", wsconn.StatusPolicyViolation, "slow consumer")
)

// ending is how the server ends a session that it explains: an ERROR frame
// and then a close. Zero fields take the reason's own values.
type ending struct {
	reason  *CloseReason
	kind    string              // bounded kind of problem, for the log (frame_too_large, permission)
	code    wsconn.StatusCode   // close code; zero: reason.Code()
	message string              // ERROR message header; empty: reason.Message()
	detail  string              // ERROR body
	receipt string              // receipt-id, when the offending frame asked for one
	headers []stompframe.Header // further ERROR headers
}

// fail queues e's ERROR frame and its close after everything already
// queued, unless the session is already ending; it reports whether it
// did. For CloseOutboundBudget what is queued is discarded first.
//
// The ERROR frame goes out in a text message, and its parts may carry
// client data (an echoed receipt id, a stage's message quoting a header):
// bytes that are not UTF-8 are replaced, so the frame never makes a
// browser drop the socket before it has read why.
func (s *session) fail(e ending) bool {
	code, msg := e.code, e.message
	if code == 0 {
		code = e.reason.Code()
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
	if e.reason == CloseOutboundBudget {
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
	if e.reason == CloseProtocolError || e.reason == CloseAuthFailed {
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
