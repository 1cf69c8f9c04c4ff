package metrics

import (
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

func TestInputPaused(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.InputPaused(outcome.InputBudgetFrames, 250*time.Millisecond)
	m.InputPaused(outcome.InputBudgetFrames, 500*time.Millisecond)
	m.InputPaused(outcome.InputBudgetBytes, 250*time.Millisecond)
	m.InputPaused("made-up", 0)
	var nilM *Metrics
	nilM.InputPaused(outcome.InputBudgetBytes, time.Second)

	for _, tt := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"stompgate_input_pauses_total", []string{"budget", "frames"}, 2},
		{"stompgate_input_pauses_total", []string{"budget", "bytes"}, 1},
		{"stompgate_input_pauses_total", []string{"budget", "other"}, 1},
		{"stompgate_input_paused_seconds_total", nil, 1},
	} {
		if got := sample(t, reg, tt.metric, tt.labels...); got != tt.want {
			t.Errorf("%s{%s} = %v, want %v", tt.metric, labelKey(tt.labels...), got, tt.want)
		}
	}
}
