package outcome

// Handshake is how one WebSocket upgrade request ended. Each result is
// defined once, below, with the bounded label it is counted under
// (stompgate_handshakes_total{result}). The server reports the ones that
// happen inside it; the limiters in front of it (the per-IP handshake
// limit, the session caps) report theirs through their adapters with the
// same values, so metrics and logs read one vocabulary. Adding a result is
// one line here.
//
// A Handshake is immutable; compare results by pointer.
type Handshake struct{ label string }

// String returns the label.
func (r *Handshake) String() string { return r.label }

var handshakes []*Handshake

func defineHandshake(label string) *Handshake {
	r := &Handshake{label: label}
	handshakes = append(handshakes, r)
	return r
}

// Handshakes returns every Handshake, in the order defined, so that a
// metrics adapter can resolve a counter for each once. The slice is a
// fresh copy.
func Handshakes() []*Handshake { return append([]*Handshake(nil), handshakes...) }

// The handshake results.
var (
	// HandshakeAccepted: the upgrade went through.
	HandshakeAccepted = defineHandshake("accepted")
	// HandshakeRejectedLimit: the per-IP handshake limit refused it (429
	// with Retry-After).
	HandshakeRejectedLimit = defineHandshake("rejected_limit")
	// HandshakeRejectedBan: the client address is banned.
	HandshakeRejectedBan = defineHandshake("rejected_ban")
	// HandshakeRejectedOrigin: a cross-origin page not allowed by the
	// server's origin patterns (403).
	HandshakeRejectedOrigin = defineHandshake("rejected_origin")
	// HandshakeRejectedShutdown: Shutdown or Drain has begun (503).
	HandshakeRejectedShutdown = defineHandshake("rejected_shutdown")
	// HandshakeStoreError: a limiter's store failed and it is configured
	// to fail closed, so the request was refused.
	HandshakeStoreError = defineHandshake("store_error")
	// HandshakeUpgradeFailed: not a valid WebSocket upgrade.
	HandshakeUpgradeFailed = defineHandshake("upgrade_failed")
	// HandshakeRejectedSessionCap: the client address already holds as
	// many open sessions as its policy zone's max_connections allows (429
	// with Retry-After).
	HandshakeRejectedSessionCap = defineHandshake("rejected_session_cap")
	// HandshakeRejectedAdmission: the instance admits no more sessions
	// now (its session cap, admission rate or memory guard; 503 with
	// Retry-After). The reason is counted in
	// stompgate_admission_refused_total.
	HandshakeRejectedAdmission = defineHandshake("rejected_admission")
	// HandshakeSessionCapTimeout: the per-IP session cap's store did not
	// answer within the handshake's acquire bound, which only a saturated
	// instance makes it wait (503 with Retry-After).
	HandshakeSessionCapTimeout = defineHandshake("session_cap_timeout")
)
