package metrics

import (
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

func TestMessageWritten(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.MessageWritten(outcome.DeliveryLocal, 300*time.Microsecond, 100*time.Microsecond)
	m.MessageWritten(outcome.DeliveryLocal, 3*time.Millisecond, time.Millisecond)
	m.MessageWritten(outcome.DeliveryRelay, time.Millisecond, 0)
	m.MessageWritten(outcome.DeliveryAPI, time.Millisecond, 0)
	m.MessageWritten("made-up", time.Millisecond, 0)
	var nilM *Metrics
	nilM.MessageWritten(outcome.DeliveryLocal, time.Second, time.Second)

	for _, tt := range []struct {
		path string
		want float64
	}{
		{outcome.DeliveryLocal, 2},
		{outcome.DeliveryRelay, 1},
		{outcome.DeliveryAPI, 1},
		{"other", 1},
	} {
		if got := sample(t, reg, "stompgate_delivery_latency_seconds", "path", tt.path); got != tt.want {
			t.Errorf("stompgate_delivery_latency_seconds{path=%q} count = %v, want %v", tt.path, got, tt.want)
		}
	}
	if got := sample(t, reg, "stompgate_outbound_queue_wait_seconds"); got != 5 {
		t.Errorf("stompgate_outbound_queue_wait_seconds count = %v, want 5", got)
	}
	// The local path's observations fall on either side of the 1ms edge
	// that the p99 target reads.
	mf := gather(t, reg)["stompgate_delivery_latency_seconds"]
	for _, s := range mf.GetMetric() {
		if s.GetLabel()[0].GetValue() != outcome.DeliveryLocal {
			continue
		}
		for _, b := range s.GetHistogram().GetBucket() {
			if b.GetUpperBound() == 0.001 && b.GetCumulativeCount() != 1 {
				t.Errorf("local bucket le=0.001 = %d, want 1", b.GetCumulativeCount())
			}
		}
	}
}
