package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

func (m *Metrics) buildSessions(b *builder) {
	m.sessionsActive = b.gauge("stompgate_sessions_active",
		"STOMP sessions currently open (WebSocket upgraded, not yet closed).")
	m.sessionsOpened = b.counter("stompgate_sessions_opened_total",
		"STOMP sessions opened since start (successful WebSocket upgrades).")
	closed := b.counterVec("stompgate_sessions_closed_total",
		"STOMP sessions closed since start, by reason.", "reason")
	// The reasons are the server's own (server.CloseReasons), each
	// resolved once here.
	m.sessionsClosed = make(map[*outcome.Close]prometheus.Counter)
	for _, r := range outcome.Closes() {
		m.sessionsClosed[r] = closed.WithLabelValues(r.String())
	}
	m.sessionsClosedOther = closed.WithLabelValues(labelOther)
	m.panics = b.counter("stompgate_panics_recovered_total",
		"Panics recovered at the session boundary; each one closed its session.")
	m.readerPauses = b.counter("stompgate_reader_pauses_total",
		"Times a session stopped reading because its own replies (RECEIPTs) filled its outbound bounds; it resumes when the client reads.")
	m.sessionsCompressed = b.counter("stompgate_sessions_compressed_total",
		"STOMP sessions opened since start that negotiated permessage-deflate (-compression); against stompgate_sessions_opened_total, the share of clients that get compressed frames.")
	m.heartBeatsCapped = b.counter("stompgate_heartbeat_offers_capped_total",
		"CONNECTs whose heart-beat offer had a part above the server's bound (-max-heart-beat), treated as none: such sessions are checked with WebSocket pings.")
}

// HeartBeatCapped counts a CONNECT whose heart-beat offer was above the
// bound (stompgate_heartbeat_offers_capped_total).
func (m *Metrics) HeartBeatCapped() {
	if m == nil {
		return
	}
	m.heartBeatsCapped.Inc()
}

// SessionCompressed counts a session that negotiated permessage-deflate
// (stompgate_sessions_compressed_total).
func (m *Metrics) SessionCompressed() {
	if m == nil {
		return
	}
	m.sessionsCompressed.Inc()
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
func (m *Metrics) SessionClosed(reason *outcome.Close) {
	if m == nil {
		return
	}
	c, ok := m.sessionsClosed[reason]
	if !ok {
		c = m.sessionsClosedOther
	}
	c.Inc()
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
