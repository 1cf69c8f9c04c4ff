package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/stompgate/stompgate/outcome"
)

// DeliveryLatencyBuckets are the upper bounds, in seconds, of
// stompgate_delivery_latency_seconds and
// stompgate_outbound_queue_wait_seconds: 50µs (a delivery on an idle
// server) to 2.5s (a server far behind). 1ms and 2ms are edges, so that
// the p99 targets read exact buckets, and 100ms, where
// StompgateDeliverySlow fires.
var DeliveryLatencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.002, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5,
}

// deliveryPathLabels are the path label's values: package outcome's
// delivery paths, then other.
var deliveryPathLabels = append(outcome.DeliveryPaths(), labelOther)

// latencyMetrics time deliveries (server.DeliveryObserver): by path, and
// the part spent in outbound queues. The observers are resolved once.
type latencyMetrics struct {
	local, relay, api, other prometheus.Observer
	queued                   prometheus.Observer
}

func (m *Metrics) buildLatency(b *builder) {
	b.name = "stompgate_delivery_latency_seconds"
	latency := promauto.With(b).NewHistogramVec(prometheus.HistogramOpts{
		Name:    b.name,
		Help:    "Time from a message's arrival (the end of the read that brought a SEND, a relay message read from Redis, an API call) to the write that put each MESSAGE on a subscriber's socket, by path: local, relay, api.",
		Buckets: DeliveryLatencyBuckets,
	}, []string{"path"})
	obs := resolveAll(deliveryPathLabels, latency.WithLabelValues)
	m.latency.local, m.latency.relay, m.latency.api, m.latency.other = obs[0], obs[1], obs[2], obs[3]
	b.name = "stompgate_outbound_queue_wait_seconds"
	m.latency.queued = promauto.With(b).NewHistogram(prometheus.HistogramOpts{
		Name:    b.name,
		Help:    "Time each MESSAGE waited in a subscriber's outbound queue: from the moment the broker began handing its message to subscribers to the write that put it on the socket.",
		Buckets: DeliveryLatencyBuckets,
	})
}

// MessageWritten times one MESSAGE written to a subscriber's socket
// (stompgate_delivery_latency_seconds{path} and
// stompgate_outbound_queue_wait_seconds). A path outside
// outcome.DeliveryPaths is counted as other.
func (m *Metrics) MessageWritten(path string, latency, queued time.Duration) {
	if m == nil {
		return
	}
	var o prometheus.Observer
	switch path {
	case outcome.DeliveryLocal:
		o = m.latency.local
	case outcome.DeliveryRelay:
		o = m.latency.relay
	case outcome.DeliveryAPI:
		o = m.latency.api
	default:
		o = m.latency.other
	}
	o.Observe(latency.Seconds())
	m.latency.queued.Observe(queued.Seconds())
}
