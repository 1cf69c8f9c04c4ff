package metrics

import "github.com/prometheus/client_golang/prometheus"

// HandshakePipelineStats are the counters of the handshake limiter's Redis
// pipeline (handshake.PipelineStats), as NewHandshakePipelineCollector
// reads them. Every field only grows.
type HandshakePipelineStats struct {
	// Batches is the number of pipelines sent to Redis.
	Batches uint64
	// Decisions is the number of handshake decisions those pipelines
	// carried; Decisions/Batches is the mean batch size.
	Decisions uint64
	// QueueFull is the number of decisions refused because the queue of
	// decisions waiting for a pipeline was full (the limiter then decided
	// them in process memory).
	QueueFull uint64
	// QueueWait is the number of decisions not sent because they waited
	// too long in that queue (decided in process memory too).
	QueueWait uint64
}

// NewHandshakePipelineCollector returns a collector that reads stats at
// each scrape and exposes it as three counters:
//
//   - stompgate_handshake_redis_batches_total: pipelines of handshake
//     decisions sent to Redis.
//   - stompgate_handshake_redis_batched_decisions_total: decisions those
//     pipelines carried. Its rate over the rate of the batches is the mean
//     batch size: near 1 when handshakes arrive one at a time, growing
//     with concurrency.
//   - stompgate_handshake_redis_queue_full_total: decisions refused
//     because the queue was full (the bound biting: the server has more
//     handshakes in hand than it sends to Redis).
//   - stompgate_handshake_redis_queue_wait_total: decisions not sent
//     because they waited in the queue longer than its bound.
//
// Register it on the same registerer as New's collectors. stats must be
// safe for concurrent use.
func NewHandshakePipelineCollector(stats func() HandshakePipelineStats) prometheus.Collector {
	return &handshakePipelineCollector{stats: stats}
}

var (
	handshakeBatchesDesc = prometheus.NewDesc("stompgate_handshake_redis_batches_total",
		"Pipelines of handshake decisions sent to Redis.", nil, nil)
	handshakeBatchedDesc = prometheus.NewDesc("stompgate_handshake_redis_batched_decisions_total",
		"Handshake decisions carried by pipelines to Redis.", nil, nil)
	handshakeQueueFullDesc = prometheus.NewDesc("stompgate_handshake_redis_queue_full_total",
		"Handshake decisions refused because the queue for Redis was full.", nil, nil)
	handshakeQueueWaitDesc = prometheus.NewDesc("stompgate_handshake_redis_queue_wait_total",
		"Handshake decisions not sent to Redis because they waited too long in the queue.", nil, nil)
)

// handshakePipelineCollector is the prometheus.Collector of
// NewHandshakePipelineCollector.
type handshakePipelineCollector struct {
	stats func() HandshakePipelineStats
}

func (c *handshakePipelineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- handshakeBatchesDesc
	ch <- handshakeBatchedDesc
	ch <- handshakeQueueFullDesc
	ch <- handshakeQueueWaitDesc
}

func (c *handshakePipelineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	ch <- prometheus.MustNewConstMetric(handshakeBatchesDesc, prometheus.CounterValue, float64(st.Batches))
	ch <- prometheus.MustNewConstMetric(handshakeBatchedDesc, prometheus.CounterValue, float64(st.Decisions))
	ch <- prometheus.MustNewConstMetric(handshakeQueueFullDesc, prometheus.CounterValue, float64(st.QueueFull))
	ch <- prometheus.MustNewConstMetric(handshakeQueueWaitDesc, prometheus.CounterValue, float64(st.QueueWait))
}
