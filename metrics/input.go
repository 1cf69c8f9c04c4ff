package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/outcome"
)

// inputMetrics count the per-session inbound budget
// (server.Config.InboundFrames): how often readers paused, for which
// budget, and for how long in all.
type inputMetrics struct {
	pausesFrames, pausesBytes, pausesOther prometheus.Counter
	pausedSeconds                          prometheus.Counter
}

func (m *Metrics) buildInput(b *builder) {
	pauses := b.counterVec("stompgate_input_pauses_total",
		"Times a session's reader stopped reading because the session spent its inbound budget per window, by budget (frames, bytes); TCP holds the client back until the window ends.", "budget")
	m.input.pausesFrames = pauses.WithLabelValues(outcome.InputBudgetFrames)
	m.input.pausesBytes = pauses.WithLabelValues(outcome.InputBudgetBytes)
	m.input.pausesOther = pauses.WithLabelValues(labelOther)
	m.input.pausedSeconds = b.counter("stompgate_input_paused_seconds_total",
		"Seconds session readers spent paused by the inbound budget, summed over sessions.")
}

// InputPaused counts one pause of a session's reader for its inbound
// budget (stompgate_input_pauses_total{budget}) and its length
// (stompgate_input_paused_seconds_total).
func (m *Metrics) InputPaused(budget string, d time.Duration) {
	if m == nil {
		return
	}
	switch budget {
	case outcome.InputBudgetFrames:
		m.input.pausesFrames.Inc()
	case outcome.InputBudgetBytes:
		m.input.pausesBytes.Inc()
	default:
		m.input.pausesOther.Inc()
	}
	m.input.pausedSeconds.Add(d.Seconds())
}
