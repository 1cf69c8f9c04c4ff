package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// ListenerReason is the reason label of stompgate_listener_refused_total:
// why the public listener refused a connection at accept.
type ListenerReason uint8

// The listener refusal reasons. A value outside this list is counted as
// "other".
const (
	// ListenerOther is a reason this package does not name.
	ListenerOther ListenerReason = iota
	// ListenerRate: the bucket of accepted connections (-accept-rate)
	// is empty.
	ListenerRate
	// ListenerPending: -max-pending-conns connections have not sent
	// their request's headers yet.
	ListenerPending
	// ListenerPendingAddr: the client's address holds
	// -max-pending-conns-per-addr of them.
	ListenerPendingAddr
)

// The label values come from package outcome, where package admission
// takes them too.
var listenerReasonLabels = append([]string{labelOther}, outcome.ListenerReasons()...)

// ListenerReasonOf returns the ListenerReason of a reason the listener
// reported (outcome.Listener*); anything else is ListenerOther.
func ListenerReasonOf(reason string) ListenerReason {
	return enumOf[ListenerReason](listenerReasonLabels, reason)
}

// String returns the label value r is counted under.
func (r ListenerReason) String() string { return labelOf(listenerReasonLabels, r) }

// listenerMetrics are the public listener's counters.
type listenerMetrics struct {
	refused []prometheus.Counter
	evicted prometheus.Counter
}

func (m *Metrics) buildListener(b *builder) {
	refused := b.counterVec("stompgate_listener_refused_total",
		"Connections the public listener answered with a prebuilt 503 and closed at accept, before any HTTP, by reason: accept_rate (-accept-rate bucket empty), pending (-max-pending-conns not yet past their request's headers), pending_addr (the address holds -max-pending-conns-per-addr of them).",
		"reason")
	m.listener.refused = resolveAll(listenerReasonLabels, refused.WithLabelValues)
	m.listener.evicted = b.counter("stompgate_listener_evicted_total",
		"Pending connections (accepted, request headers not yet read) closed past -pending-conn-timeout to make room for a new one while a pending bound was full.")
}

// ListenerRefused counts a connection refused at accept
// (stompgate_listener_refused_total{reason}).
func (m *Metrics) ListenerRefused(r ListenerReason) {
	if m == nil {
		return
	}
	m.listener.refused[known(listenerReasonLabels, r)].Inc()
}

// ListenerEvicted counts a pending connection closed to make room
// (stompgate_listener_evicted_total).
func (m *Metrics) ListenerEvicted() {
	if m == nil {
		return
	}
	m.listener.evicted.Inc()
}
