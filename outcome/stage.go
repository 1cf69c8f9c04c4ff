package outcome

// Reason is why an interceptor stage stopped a frame: dropped silently
// (Close is nil; the session stays open) or rejected (the session ends
// with an ERROR frame and the Close). Its label is counted under
// stompgate_frames_dropped_total{reason} (as "rejected" for every
// rejection) and, for a rejection that ends in CloseProtocolError or
// CloseAuthFailed, under stompgate_protocol_error_closes_total{kind}.
//
// A Reason is immutable; compare reasons by pointer. The standard stages'
// reasons are defined below; a program's own stage makes its own once,
// with NewDrop or NewReject, and they are counted under "rejected" or
// "other" where a label is bounded.
type Reason struct {
	label string
	close *Close
}

// String returns the label; empty for a nil Reason.
func (r *Reason) String() string {
	if r == nil {
		return ""
	}
	return r.label
}

// Close is how a rejection ends the session; nil for a drop and for a nil
// Reason.
func (r *Reason) Close() *Close {
	if r == nil {
		return nil
	}
	return r.close
}

// NewReject returns a rejection reason labelled label that ends the
// session with close (CloseProtocolError when nil), for a stage a program
// adds. label must come from a small fixed set, never from client input.
func NewReject(label string, close *Close) *Reason {
	if close == nil {
		close = CloseProtocolError
	}
	return &Reason{label: label, close: close}
}

// NewDrop returns a drop reason labelled label, for a stage a program
// adds. label must come from a small fixed set, never from client input.
func NewDrop(label string) *Reason { return &Reason{label: label} }

var reasons []*Reason

func defineReason(label string, close *Close) *Reason {
	r := &Reason{label: label, close: close}
	reasons = append(reasons, r)
	return r
}

// Reasons returns every reason of the standard stages, in the order
// defined. The slice is a fresh copy.
func Reasons() []*Reason { return append([]*Reason(nil), reasons...) }

// The standard stages' reasons.
var (
	// DropRateLimit: a frame over the session limit, dropped silently.
	DropRateLimit = defineReason("rate_limit", nil)
	// DropAborted: SENDs whose transaction was aborted, or was still
	// open when the session ended.
	DropAborted = defineReason("transaction_aborted", nil)
	// DropPrincipalLimit: a frame over its principal's limit across
	// every session and instance, dropped silently.
	DropPrincipalLimit = defineReason("principal_limit", nil)
	// RejectAbuse: a session that kept flooding past its limit, closed by
	// escalation.
	RejectAbuse = defineReason("rate_limit_abuse", CloseRateLimitAbuse)
	// RejectAuth: missing, invalid or expired credentials.
	RejectAuth = defineReason("auth", CloseAuthFailed)
	// RejectPermission: a destination outside the principal's patterns.
	RejectPermission = defineReason("permission", CloseProtocolError)
	// RejectBanned: CONNECT by a principal that is banned, usually for an
	// earlier session's rate limit abuse. It is the same abuse carrying on
	// from another connection, so it closes as the escalation that banned
	// it did, not as a credential failure.
	RejectBanned = defineReason("banned", CloseRateLimitAbuse)
	// RejectSessionCap: a CONNECT refused because its principal already
	// holds as many sessions as it may.
	RejectSessionCap = defineReason("session_cap", CloseSessionCap)
	// RejectTokenFlood: a session sent more new tokens than its token
	// check budget allows. The session is ended rather than the token
	// ignored: a client that sends new tokens that fast is broken or
	// hostile, and one whose refresh was ignored would believe its new
	// expiry and patterns applied until the old token expired under it.
	RejectTokenFlood = defineReason("token_flood", CloseProtocolError)
)

// DropRejected is the stompgate_frames_dropped_total{reason} label of
// every frame a stage rejected, whatever the Reason.
const DropRejected = "rejected"
