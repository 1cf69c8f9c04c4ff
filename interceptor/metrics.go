package interceptor

import (
	"time"

	"github.com/stompgate/stompgate/stompframe"
)

// PassObserver is told about each frame that reached the MetricsStage.
type PassObserver interface {
	FramePassed(command string)
}

// MetricsStage reports the frames that passed every stage before it to its
// PassObserver. It must come last, so that dropped frames never count as
// processed throughput: drops are counted by the Chain under their reason.
// It never stops a frame. The session's own counters are kept by the
// Chain, not by this stage.
//
// A MetricsStage is safe for concurrent use if its observer is.
type MetricsStage struct {
	obs PassObserver
}

var _ Stage = (*MetricsStage)(nil)

// NewMetricsStage returns the stage; obs may be nil, in which case the
// stage does nothing.
func NewMetricsStage(obs PassObserver) *MetricsStage { return &MetricsStage{obs: obs} }

// Handle reports f as passed.
func (m *MetricsStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	if m.obs != nil {
		m.obs.FramePassed(f.Command)
	}
	return Continue()
}
