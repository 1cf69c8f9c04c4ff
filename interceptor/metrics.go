package interceptor

import (
	"time"

	"github.com/stompgate/stompgate/stompframe"
)

// PassObserver is told about each frame that reached the MetricsStage.
type PassObserver interface {
	FramePassed(command string)
}

// MetricsStage counts the frames that passed every stage before it. It
// must come last, so that dropped frames never count as processed
// throughput: drops are counted by the Chain under their reason. It never
// stops a frame.
//
// A MetricsStage is safe for concurrent use if its observer is.
type MetricsStage struct {
	obs PassObserver
}

var _ Stage = (*MetricsStage)(nil)

// NewMetricsStage returns the stage; obs may be nil, in which case only
// the session's own counters are kept.
func NewMetricsStage(obs PassObserver) *MetricsStage { return &MetricsStage{obs: obs} }

// Handle counts f as passed.
func (m *MetricsStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	s.passed.Add(1)
	if m.obs != nil {
		m.obs.FramePassed(f.Command)
	}
	return Continue()
}
