package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	for range 5 {
		m.SessionOpened()
	}
	m.SessionClosed(outcome.CloseNormal)
	m.SessionClosed(outcome.CloseSlowConsumer)
	m.SessionClosed(nil)
	m.Panic()
	m.SessionCompressed()

	tests := []struct {
		name   string
		metric string
		labels []string
		want   float64
	}{
		{"active", "stompgate_sessions_active", nil, 2},
		{"opened", "stompgate_sessions_opened_total", nil, 5},
		{"compressed", "stompgate_sessions_compressed_total", nil, 1},
		{"closed normal", "stompgate_sessions_closed_total", []string{"reason", "normal"}, 1},
		{"closed slow_consumer", "stompgate_sessions_closed_total", []string{"reason", "slow_consumer"}, 1},
		{"closed out of range", "stompgate_sessions_closed_total", []string{"reason", "other"}, 1},
		{"closed shutdown", "stompgate_sessions_closed_total", []string{"reason", "shutdown"}, 0},
		{"panics", "stompgate_panics_recovered_total", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := sample(t, reg, tt.metric, tt.labels...); got != tt.want {
				t.Errorf("%s{%s} = %v, want %v", tt.metric, labelKey(tt.labels...), got, tt.want)
			}
		})
	}
}
