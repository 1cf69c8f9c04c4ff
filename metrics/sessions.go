package metrics

// CloseReason says why a session ended; it is the reason label of
// stompgate_sessions_closed_total. The zero value is CloseOther.
type CloseReason uint8

// The close reasons. A value outside this list is counted as "other".
const (
	// CloseOther is a reason this package does not name.
	CloseOther CloseReason = iota
	// CloseNormal: the client sent DISCONNECT or closed the WebSocket
	// cleanly.
	CloseNormal
	// CloseProtocolError: the server sent an ERROR frame for a frame it
	// could not accept and closed (see ProtocolErrorClose for the kind).
	CloseProtocolError
	// CloseSlowConsumer: the session's outbound queue was full.
	CloseSlowConsumer
	// CloseHeartbeatTimeout: nothing arrived within the negotiated
	// heart-beat interval plus grace.
	CloseHeartbeatTimeout
	// CloseConnectTimeout: no CONNECT or STOMP frame arrived in time after
	// the WebSocket upgrade.
	CloseConnectTimeout
	// CloseRateLimitAbuse: the session kept exceeding its frame limit and
	// was closed rather than merely dropped, or its principal is banned for
	// such abuse and was refused at CONNECT.
	CloseRateLimitAbuse
	// CloseAuthFailed: CONNECT carried missing or invalid credentials.
	CloseAuthFailed
	// CloseShutdown: the server is shutting down.
	CloseShutdown
	// ClosePanic: a panic was recovered while serving the session.
	ClosePanic
	// CloseClientGone: the connection broke (read or write error, reset)
	// without a clean close.
	CloseClientGone
	// CloseTokenExpired: the session's credentials (a JWT's exp) ran out
	// and no newer token arrived.
	CloseTokenExpired
	// CloseControlFlood: the session sent more control frames
	// (SUBSCRIBE, UNSUBSCRIBE, transactions, receipts) than its budget.
	CloseControlFlood
	// ClosePingTimeout: a session without STOMP heart-beats did not
	// answer a WebSocket ping in time; the peer is gone.
	ClosePingTimeout
	// CloseSessionCap: the principal already holds as many sessions as
	// it may; refused at CONNECT.
	CloseSessionCap

	numCloseReasons = iota
)

var closeReasonLabels = [numCloseReasons]string{
	CloseOther:            labelOther,
	CloseNormal:           "normal",
	CloseProtocolError:    "protocol_error",
	CloseSlowConsumer:     "slow_consumer",
	CloseHeartbeatTimeout: "heartbeat_timeout",
	CloseConnectTimeout:   "connect_timeout",
	CloseRateLimitAbuse:   "rate_limit_abuse",
	CloseAuthFailed:       "auth_failed",
	CloseShutdown:         "shutdown",
	ClosePanic:            "panic",
	CloseClientGone:       "client_gone",
	CloseTokenExpired:     "token_expired",
	CloseControlFlood:     "control_flood",
	ClosePingTimeout:      "ping_timeout",
	CloseSessionCap:       "session_cap",
}

// String returns the label value r is counted under.
func (r CloseReason) String() string {
	if int(r) >= numCloseReasons {
		return labelOther
	}
	return closeReasonLabels[r]
}

func (m *Metrics) buildSessions(b *builder) {
	m.sessionsActive = b.gauge("stompgate_sessions_active",
		"STOMP sessions currently open (WebSocket upgraded, not yet closed).")
	m.sessionsOpened = b.counter("stompgate_sessions_opened_total",
		"STOMP sessions opened since start (successful WebSocket upgrades).")
	closed := b.counterVec("stompgate_sessions_closed_total",
		"STOMP sessions closed since start, by reason.", "reason")
	for r := range m.sessionsClosed {
		m.sessionsClosed[r] = closed.WithLabelValues(closeReasonLabels[r])
	}
	m.panics = b.counter("stompgate_panics_recovered_total",
		"Panics recovered at the session boundary; each one closed its session.")
	m.readerPauses = b.counter("stompgate_reader_pauses_total",
		"Times a session stopped reading because its own replies (RECEIPTs) filled its outbound bounds; it resumes when the client reads.")
}

// ReaderPaused counts a session that stopped reading until its client
// reads its replies (stompgate_reader_pauses_total).
func (m *Metrics) ReaderPaused() {
	if m == nil {
		return
	}
	m.readerPauses.Inc()
}

// SessionOpened counts a new session: stompgate_sessions_active goes up by
// one and stompgate_sessions_opened_total counts it.
func (m *Metrics) SessionOpened() {
	if m == nil {
		return
	}
	m.sessionsOpened.Inc()
	m.sessionsActive.Inc()
}

// SessionClosed counts the end of a session opened with SessionOpened:
// stompgate_sessions_active goes down by one and
// stompgate_sessions_closed_total{reason} counts it. Call it exactly once
// per session, whatever ended it.
func (m *Metrics) SessionClosed(reason CloseReason) {
	if m == nil {
		return
	}
	if int(reason) >= numCloseReasons {
		reason = CloseOther
	}
	m.sessionsClosed[reason].Inc()
	m.sessionsActive.Dec()
}

// Panic counts a panic recovered at the session boundary
// (stompgate_panics_recovered_total). The session it closed is counted
// separately by SessionClosed(ClosePanic).
func (m *Metrics) Panic() {
	if m == nil {
		return
	}
	m.panics.Inc()
}
