package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestPresence(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.PresenceEvent("join")
	m.PresenceEvent("join")
	m.PresenceEvent("wave")
	m.PresenceFrame(outcome.PresenceSnapshot)
	m.PresenceRefused(outcome.PresenceWatchLimit)
	m.PresenceTruncated()
	m.PresenceStoreError()
	m.PresenceDropped()
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_presence_events_total", []string{"op", "join"}, 2},
		{"stompgate_presence_events_total", []string{"op", "other"}, 1},
		{"stompgate_presence_events_total", []string{"op", "leave"}, 0},
		{"stompgate_presence_frames_total", []string{"kind", "snapshot"}, 1},
		{"stompgate_presence_refused_total", []string{"reason", "watch_limit"}, 1},
		{"stompgate_presence_truncated_total", nil, 1},
		{"stompgate_presence_store_errors_total", nil, 1},
		{"stompgate_presence_dropped_total", nil, 1},
	} {
		if got := sample(t, reg, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	var nilM *Metrics
	nilM.PresenceEvent("join")
	nilM.PresenceFrame(outcome.PresenceDelta)
	nilM.PresenceRefused(outcome.PresenceNotEnabled)
	nilM.PresenceTruncated()
	nilM.PresenceStoreError()
	nilM.PresenceDropped()
}
