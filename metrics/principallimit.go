package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// The sources of a per-principal limit decision
// (stompgate_principal_limit_decisions_total{source}), from package
// outcome, where package principallimit takes them too.
var principalLimitSourceLabels = append([]string{labelOther}, outcome.PrincipalLimitSources()...)

// The result label of the per-principal limit's decisions.
var principalLimitResultLabels = [2]string{"dropped", "passed"}

// principalLimitMetrics are the per-principal send limit's collectors. Its
// drops are also counted as stompgate_frames_dropped_total{reason=
// "principal_limit"}.
type principalLimitMetrics struct {
	// decisions is indexed by [passed 0/1][source].
	decisions   [2][]prometheus.Counter
	roundTrips  prometheus.Counter
	storeErrors prometheus.Counter
	evicted     prometheus.Counter
	fallback    prometheus.Gauge
	confirm     [numConfirmResults]prometheus.Counter
}

func (m *Metrics) buildPrincipalLimit(b *builder) {
	decisions := b.counterVec("stompgate_principal_limit_decisions_total",
		"Per-principal send limit decisions, by result (passed, dropped) and source: local (the pre-check in memory, no round trip), redis (a charge Redis answered), memory (this instance's own count: no Redis, Redis unreachable, or a charge that failed in the window).",
		"result", "source")
	for r, rl := range principalLimitResultLabels {
		m.plimit.decisions[r] = resolveAll(principalLimitSourceLabels, func(v ...string) prometheus.Counter {
			return decisions.WithLabelValues(rl, v[0])
		})
	}
	m.plimit.roundTrips = b.counter("stompgate_principal_limit_redis_round_trips_total",
		"Charges the per-principal send limit sent to Redis, answered or not.")
	m.plimit.storeErrors = b.counter("stompgate_principal_limit_store_errors_total",
		"Redis calls of the per-principal send limit that failed (charges, probe PINGs).")
	m.plimit.evicted = b.counter("stompgate_principal_limit_evictions_total",
		"Principals' entries dropped while their window ran, to keep the per-principal send limit's memory within its bound.")
	m.plimit.fallback = b.gauge("stompgate_principal_limit_fallback",
		"1 while the per-principal send limit counts this instance's frames only because Redis is unreachable, else 0.")
	confirmations := b.counterVec("stompgate_principal_limit_confirmations_total",
		"PINGs (bounded by -redis-confirm-timeout) that confirmed -redis-timeouts-to-fail per-principal limit charges timed out in a row, by result: answered (no fallback) or failed (fallback mode entered).", "result")
	resolve(m.plimit.confirm[:], confirmLabels[:], confirmations.WithLabelValues)
}

// PrincipalLimitDecision counts one decision of the per-principal send
// limit (stompgate_principal_limit_decisions_total{result,source}); source
// is one of outcome.PrincipalLimitSources, anything else is "other".
func (m *Metrics) PrincipalLimitDecision(passed bool, source string) {
	if m == nil {
		return
	}
	r := 0
	if passed {
		r = 1
	}
	m.plimit.decisions[r][labelIndex(principalLimitSourceLabels, source)].Inc()
}

// PrincipalLimitRoundTrip counts a charge sent to Redis
// (stompgate_principal_limit_redis_round_trips_total).
func (m *Metrics) PrincipalLimitRoundTrip() {
	if m == nil {
		return
	}
	m.plimit.roundTrips.Inc()
}

// PrincipalLimitStoreError counts a failed Redis call of the
// per-principal send limit (stompgate_principal_limit_store_errors_total).
func (m *Metrics) PrincipalLimitStoreError() {
	if m == nil {
		return
	}
	m.plimit.storeErrors.Inc()
}

// PrincipalLimitEvicted counts an entry evicted while its window ran
// (stompgate_principal_limit_evictions_total).
func (m *Metrics) PrincipalLimitEvicted() {
	if m == nil {
		return
	}
	m.plimit.evicted.Inc()
}

// PrincipalLimitConfirmation counts a PING that confirmed the
// per-principal limit's timeouts in a row
// (stompgate_principal_limit_confirmations_total{result}).
func (m *Metrics) PrincipalLimitConfirmation(answered bool) {
	if m == nil {
		return
	}
	m.plimit.confirm[confirmIndex(answered)].Inc()
}

// SetPrincipalLimitFallback sets stompgate_principal_limit_fallback to 1
// while the per-principal send limit runs without Redis, 0 when it is
// back on it.
func (m *Metrics) SetPrincipalLimitFallback(active bool) {
	if m == nil {
		return
	}
	if active {
		m.plimit.fallback.Set(1)
	} else {
		m.plimit.fallback.Set(0)
	}
}
