package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// CapScope is the scope label of the session cap metrics: what a cap
// counts sessions by.
type CapScope uint8

// The session cap scopes. A value outside this list is counted as
// "other".
const (
	// CapScopeOther is a scope this package does not name.
	CapScopeOther CapScope = iota
	// CapScopeIP: sessions per client IP, checked at the handshake.
	CapScopeIP
	// CapScopePrincipal: sessions per authenticated principal, checked at
	// CONNECT.
	CapScopePrincipal
	// CapScopeDestination: subscriptions per destination, checked at
	// SUBSCRIBE.
	CapScopeDestination
)

// The scopes come from package outcome, where package sessioncap takes
// them too: importing sessioncap would bring its Redis client into every
// program that imports metrics.
var capScopeLabels = append([]string{labelOther}, outcome.CapScopes()...)

// CapScopeOf returns the CapScope of a scope the session caps reported
// (sessioncap.ScopeIP, sessioncap.ScopePrincipal); anything else is
// CapScopeOther.
func CapScopeOf(scope string) CapScope { return enumOf[CapScope](capScopeLabels, scope) }

// String returns the label value s is counted under.
func (s CapScope) String() string { return labelOf(capScopeLabels, s) }

// capMetrics are the session caps' collectors. Refusals are counted
// where the client sees them: stompgate_handshakes_total{result=
// "rejected_session_cap"} for the per-IP cap and
// stompgate_sessions_closed_total{reason="session_cap"} for the
// per-principal one.
type capMetrics struct {
	leases      []prometheus.Gauge
	displaced   []prometheus.Counter
	storeErrors prometheus.Counter
	restored    prometheus.Counter
	fallback    prometheus.Gauge
	local       prometheus.Counter
	confirm     [numConfirmResults]prometheus.Counter
}

func (m *Metrics) buildSessionCaps(b *builder) {
	leases := b.gaugeVec("stompgate_session_cap_leases",
		"Session slots this instance holds in the session caps, by scope (ip, principal).", "scope")
	m.caps.leases = resolveAll(capScopeLabels, leases.WithLabelValues)
	displaced := b.counterVec("stompgate_session_cap_displaced_total",
		"Sessions that lost their slot to a newer session of the same key at the cap, by scope (-session-cap-displace).", "scope")
	m.caps.displaced = resolveAll(capScopeLabels, displaced.WithLabelValues)
	m.caps.storeErrors = b.counter("stompgate_session_cap_store_errors_total",
		"Redis calls of the session caps that failed (acquire, release, renewal, probe).")
	m.caps.restored = b.counter("stompgate_session_cap_leases_restored_total",
		"Session leases that renewal found missing in Redis (restarted empty, or out of reach longer than the lease TTL) and wrote back.")
	m.caps.fallback = b.gauge("stompgate_session_cap_fallback",
		"1 while the session caps count this instance's sessions only because Redis is unreachable, else 0.")
	m.caps.local = b.counter("stompgate_session_cap_local_decisions_total",
		"Session cap decisions made on this instance's own count because a Redis call failed (timed out) while Redis was not judged failing, whatever -limiter-fail says.")
	confirmations := b.counterVec("stompgate_session_cap_confirmations_total",
		"PINGs (bounded by -redis-confirm-timeout) that confirmed -redis-timeouts-to-fail session cap calls timed out in a row, by result: answered (no fallback) or failed (fallback mode entered).", "result")
	resolve(m.caps.confirm[:], confirmLabels[:], confirmations.WithLabelValues)
}

// SessionCapLocalDecision counts a session cap decision made on this
// instance's own count while Redis was not judged failing
// (stompgate_session_cap_local_decisions_total).
func (m *Metrics) SessionCapLocalDecision() {
	if m == nil {
		return
	}
	m.caps.local.Inc()
}

// SessionCapConfirmation counts a PING that confirmed the session caps'
// timeouts in a row (stompgate_session_cap_confirmations_total{result}).
func (m *Metrics) SessionCapConfirmation(answered bool) {
	if m == nil {
		return
	}
	m.caps.confirm[confirmIndex(answered)].Inc()
}

// SessionCapAcquired counts a slot taken in scope
// (stompgate_session_cap_leases{scope} up by one).
func (m *Metrics) SessionCapAcquired(s CapScope) {
	if m == nil {
		return
	}
	m.caps.leases[known(capScopeLabels, s)].Inc()
}

// SessionCapDisplaced counts n sessions of scope that a newer one
// displaced at the cap (stompgate_session_cap_displaced_total{scope}).
func (m *Metrics) SessionCapDisplaced(s CapScope, n int) {
	if m == nil {
		return
	}
	m.caps.displaced[known(capScopeLabels, s)].Add(float64(n))
}

// SessionCapReleased counts a slot given back in scope
// (stompgate_session_cap_leases{scope} down by one).
func (m *Metrics) SessionCapReleased(s CapScope) {
	if m == nil {
		return
	}
	m.caps.leases[known(capScopeLabels, s)].Dec()
}

// SessionCapStoreError counts a failed Redis call of the session caps
// (stompgate_session_cap_store_errors_total).
func (m *Metrics) SessionCapStoreError() {
	if m == nil {
		return
	}
	m.caps.storeErrors.Inc()
}

// SessionCapLeasesRestored counts n leases written back by renewal
// (stompgate_session_cap_leases_restored_total). n <= 0 counts nothing.
func (m *Metrics) SessionCapLeasesRestored(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.caps.restored.Add(float64(n))
}

// SetSessionCapFallback sets stompgate_session_cap_fallback to 1 while the
// session caps run without Redis, 0 when they are back on it.
func (m *Metrics) SetSessionCapFallback(active bool) {
	if m == nil {
		return
	}
	if active {
		m.caps.fallback.Set(1)
	} else {
		m.caps.fallback.Set(0)
	}
}
