package main

import (
	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/metrics"
)

// observeHandshakePipeline exposes the counters of the pipeline that
// carries the handshake decisions to Redis (batches, decisions, decisions
// refused by a full queue) on the app's registry. The pipeline's bounds
// are the library's defaults (handshake.DefaultMaxBatch,
// DefaultMaxQueue, DefaultMaxPipelines); its goroutines run only while
// decisions wait, so nothing is left to stop at shutdown.
func (a *app) observeHandshakePipeline(rs *handshake.RedisStore) {
	a.registry.MustRegister(metrics.NewHandshakePipelineCollector(func() metrics.HandshakePipelineStats {
		st := rs.PipelineStats()
		return metrics.HandshakePipelineStats{Batches: st.Batches, Decisions: st.Decisions, QueueFull: st.QueueFull, QueueWait: st.QueueWait}
	}))
}
