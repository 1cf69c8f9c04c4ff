package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// The store label of the handshake limiter metrics: the store that answered
// (or failed to answer) a decision.
const (
	storeOther = iota
	storeRedis
	storeMemory
	storeLocal
)

var storeLabels = append([]string{labelOther}, outcome.LimiterStores()...)

// The reason label of stompgate_handshake_limiter_local_decisions_total:
// handshake.Result.Local's values.
const (
	localOther = iota
	localRefused
	localInFlight
	localQueueFull
	localQueueWait
	localTimeout
)

var localLabels = append([]string{labelOther}, outcome.LocalReasons()...)

// The result label of the confirmation counters
// (stompgate_handshake_limiter_confirmations_total,
// stompgate_session_cap_confirmations_total): whether the PING that
// confirms timeouts in a row was answered.
const (
	confirmFailed = iota
	confirmAnswered

	numConfirmResults = iota
)

var confirmLabels = [numConfirmResults]string{
	confirmFailed:   outcome.ConfirmFailed,
	confirmAnswered: outcome.ConfirmAnswered,
}

// confirmIndex is the confirmLabels index of a confirmation's outcome.
func confirmIndex(answered bool) int {
	if answered {
		return confirmAnswered
	}
	return confirmFailed
}

// LimiterDecisionBuckets are the upper bounds, in seconds, of
// stompgate_handshake_limiter_decision_seconds: 50µs (an in-process
// decision) to 250ms (a Redis round trip in trouble). 50ms is a bound so an
// alert on a 50ms p99 reads an exact bucket edge.
var LimiterDecisionBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25,
}

func (m *Metrics) buildHandshakes(b *builder) {
	results := b.counterVec("stompgate_handshakes_total",
		"WebSocket upgrade requests, by result.", "result")
	// The results are the server's vocabulary (server.HandshakeResults),
	// each resolved once here.
	m.handshakes = make(map[*outcome.Handshake]prometheus.Counter)
	for _, r := range outcome.Handshakes() {
		m.handshakes[r] = results.WithLabelValues(r.String())
	}
	m.handshakesOther = results.WithLabelValues(labelOther)
	decision := b.histogramVec("stompgate_handshake_limiter_decision_seconds",
		"Time the handshake limiter took to decide one request, by the store that answered.",
		LimiterDecisionBuckets, "store")
	storeErrors := b.counterVec("stompgate_handshake_limiter_store_errors_total",
		"Handshake limiter store calls that failed, by store.", "store")
	m.limiterDecision = resolveAll(storeLabels, decision.WithLabelValues)
	m.limiterStoreErrors = resolveAll(storeLabels, storeErrors.WithLabelValues)
	local := b.counterVec("stompgate_handshake_limiter_local_decisions_total",
		"Handshake decisions made without Redis while Redis was not judged failing, by reason: refused and in_flight were shed (refused without asking), queue_full, queue_wait and timeout decided in process memory.", "reason")
	m.limiterLocal = resolveAll(localLabels, local.WithLabelValues)
	confirmations := b.counterVec("stompgate_handshake_limiter_confirmations_total",
		"PINGs (bounded by -redis-confirm-timeout) that confirmed -redis-timeouts-to-fail handshake round trips timed out in a row, by result: answered (Redis is alive, the timeouts were this server's load; no fallback) or failed (fallback mode entered).", "result")
	resolve(m.limiterConfirm[:], confirmLabels[:], confirmations.WithLabelValues)
	m.limiterFallback = b.gauge("stompgate_handshake_limiter_fallback",
		"1 while the handshake limiter runs on its in-process fallback store because Redis is unreachable, else 0.")
}

// Handshake counts one WebSocket upgrade request
// (stompgate_handshakes_total{result}).
func (m *Metrics) Handshake(result *outcome.Handshake) {
	if m == nil {
		return
	}
	c, ok := m.handshakes[result]
	if !ok {
		c = m.handshakesOther
	}
	c.Inc()
}

// LimiterDecision records how long the handshake limiter took to decide
// one request (stompgate_handshake_limiter_decision_seconds{store}). store
// is "redis" or "memory"; any other string is counted as "other". A
// negative elapsed is recorded as 0.
func (m *Metrics) LimiterDecision(store string, elapsed time.Duration) {
	if m == nil {
		return
	}
	m.limiterDecision[labelIndex(storeLabels, store)].Observe(max(elapsed, 0).Seconds())
}

// LimiterStoreError counts a failed call to a limiter store
// (stompgate_handshake_limiter_store_errors_total{store}).
func (m *Metrics) LimiterStoreError(store string) {
	if m == nil {
		return
	}
	m.limiterStoreErrors[labelIndex(storeLabels, store)].Inc()
}

// SetLimiterFallback sets stompgate_handshake_limiter_fallback to 1 while
// the handshake limiter runs on its in-process fallback store, 0 when it is
// back on Redis.
func (m *Metrics) SetLimiterFallback(active bool) {
	if m == nil {
		return
	}
	if active {
		m.limiterFallback.Set(1)
	} else {
		m.limiterFallback.Set(0)
	}
}

// LimiterLocalDecision counts a handshake decision made without Redis
// while Redis was not judged failing
// (stompgate_handshake_limiter_local_decisions_total{reason}). reason is
// handshake.Result.Local: "refused" or "in_flight" (shed), "queue_full",
// "queue_wait" or "timeout" (decided in memory); any other string is
// counted as "other".
func (m *Metrics) LimiterLocalDecision(reason string) {
	if m == nil {
		return
	}
	m.limiterLocal[labelIndex(localLabels, reason)].Inc()
}

// LimiterConfirmation counts a PING that confirmed the handshake
// limiter's timeouts in a row
// (stompgate_handshake_limiter_confirmations_total{result}): answered
// means Redis is alive and fallback mode was not entered.
func (m *Metrics) LimiterConfirmation(answered bool) {
	if m == nil {
		return
	}
	m.limiterConfirm[confirmIndex(answered)].Inc()
}
