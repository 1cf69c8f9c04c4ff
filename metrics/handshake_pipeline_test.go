package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHandshakePipelineCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	st := HandshakePipelineStats{Batches: 3, Decisions: 70, QueueFull: 2, QueueWait: 5}
	if err := reg.Register(NewHandshakePipelineCollector(func() HandshakePipelineStats { return st })); err != nil {
		t.Fatal(err)
	}
	st.Batches++ // read at the scrape, not at registration
	tests := []struct {
		name string
		want float64
	}{
		{"stompgate_handshake_redis_batches_total", 4},
		{"stompgate_handshake_redis_batched_decisions_total", 70},
		{"stompgate_handshake_redis_queue_full_total", 2},
		{"stompgate_handshake_redis_queue_wait_total", 5},
	}
	for _, tt := range tests {
		if got := sample(t, reg, tt.name); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
}
