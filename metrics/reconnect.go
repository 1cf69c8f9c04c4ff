package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// ReconnectScope is the scope label of the reconnect-loop metrics: what a
// count's key names.
type ReconnectScope uint8

// The reconnect-loop scopes. A value outside this list is counted as
// "other".
const (
	// ReconnectScopeOther is a scope this package does not name.
	ReconnectScopeOther ReconnectScope = iota
	// ReconnectScopeAddress: CONNECTs per client address.
	ReconnectScopeAddress
	// ReconnectScopePrincipal: CONNECTs per verified principal.
	ReconnectScopePrincipal
)

// The scopes and stores come from package outcome, where package
// reconnect takes them too.
var (
	reconnectScopeLabels = append([]string{labelOther}, outcome.ReconnectScopes()...)
	reconnectStoreLabels = append([]string{labelOther}, outcome.ReconnectStores()...)
)

// ReconnectScopeOf returns the ReconnectScope of a scope the reconnect
// counter reported (reconnect.ScopeAddress, reconnect.ScopePrincipal);
// anything else is ReconnectScopeOther.
func ReconnectScopeOf(scope string) ReconnectScope {
	return enumOf[ReconnectScope](reconnectScopeLabels, scope)
}

// String returns the label value s is counted under.
func (s ReconnectScope) String() string { return labelOf(reconnectScopeLabels, s) }

// reconnectMetrics are the reconnect-loop collectors. The refusals are
// counted where the client sees them: stompgate_handshakes_total{result=
// "rejected_ban"} for a banned address's handshake and
// stompgate_sessions_closed_total{reason="rate_limit_abuse"} for the
// CONNECT that looped and a banned principal's.
type reconnectMetrics struct {
	// connects is indexed by scope, then store.
	connects    [][]prometheus.Counter
	bans        []prometheus.Counter
	storeErrors prometheus.Counter
	fallback    prometheus.Gauge
}

func (m *Metrics) buildReconnect(b *builder) {
	connects := b.counterVec("stompgate_reconnect_connects_total",
		"CONNECTs counted against -reconnect-limit, by scope (address, principal) and by the store that counted them (redis: shared by every instance; memory: this instance's own, without Redis or while it is unreachable).", "scope", "store")
	m.reconnect.connects = make([][]prometheus.Counter, len(reconnectScopeLabels))
	for i, scope := range reconnectScopeLabels {
		m.reconnect.connects[i] = resolveAll(reconnectStoreLabels, func(store ...string) prometheus.Counter {
			return connects.WithLabelValues(scope, store[0])
		})
	}
	bans := b.counterVec("stompgate_reconnect_bans_total",
		"Keys banned for -reconnect-ban because they completed more than -reconnect-limit CONNECTs within -reconnect-window, by scope (address, principal).", "scope")
	m.reconnect.bans = resolveAll(reconnectScopeLabels, bans.WithLabelValues)
	m.reconnect.storeErrors = b.counter("stompgate_reconnect_store_errors_total",
		"Redis calls of the reconnect counter that failed (counts, probe PINGs).")
	m.reconnect.fallback = b.gauge("stompgate_reconnect_fallback",
		"1 while the reconnect counter counts this instance's CONNECTs only because Redis is unreachable, else 0.")
}

// ReconnectCounted counts one CONNECT of scope counted by store
// (stompgate_reconnect_connects_total{scope,store}).
func (m *Metrics) ReconnectCounted(s ReconnectScope, store string) {
	if m == nil {
		return
	}
	m.reconnect.connects[known(reconnectScopeLabels, s)][labelIndex(reconnectStoreLabels, store)].Inc()
}

// ReconnectBanned counts a key of scope banned for a reconnect loop
// (stompgate_reconnect_bans_total{scope}).
func (m *Metrics) ReconnectBanned(s ReconnectScope) {
	if m == nil {
		return
	}
	m.reconnect.bans[known(reconnectScopeLabels, s)].Inc()
}

// ReconnectStoreError counts a failed Redis call of the reconnect counter
// (stompgate_reconnect_store_errors_total).
func (m *Metrics) ReconnectStoreError() {
	if m == nil {
		return
	}
	m.reconnect.storeErrors.Inc()
}

// SetReconnectFallback sets stompgate_reconnect_fallback to 1 while the
// reconnect counter runs without Redis, 0 when it is back on it.
func (m *Metrics) SetReconnectFallback(active bool) {
	if m == nil {
		return
	}
	if active {
		m.reconnect.fallback.Set(1)
	} else {
		m.reconnect.fallback.Set(0)
	}
}
