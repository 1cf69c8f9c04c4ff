package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// The presence labels come from package outcome, where the server and
// package presence take them too.
var (
	presenceRefusalLabels = append([]string{labelOther}, outcome.PresenceRefusals()...)
	presenceFrameLabels   = append([]string{labelOther}, outcome.PresenceFrameKinds()...)
	presenceOpLabels      = []string{labelOther, "join", "leave"}
)

// presenceMetrics are the presence collectors.
type presenceMetrics struct {
	events      []prometheus.Counter // by op
	frames      []prometheus.Counter // by kind
	refused     []prometheus.Counter // by reason
	truncated   prometheus.Counter
	storeErrors prometheus.Counter
	dropped     prometheus.Counter
}

func (m *Metrics) buildPresence(b *builder) {
	m.presence.events = resolveAll(presenceOpLabels, b.counterVec("stompgate_presence_events_total",
		"Joins and leaves of watched presence destinations this instance received, by op (join, leave).", "op").WithLabelValues)
	m.presence.frames = resolveAll(presenceFrameLabels, b.counterVec("stompgate_presence_frames_total",
		"Presence frames queued for watchers, by kind (snapshot, delta).", "kind").WithLabelValues)
	m.presence.refused = resolveAll(presenceRefusalLabels, b.counterVec("stompgate_presence_refused_total",
		"Presence SUBSCRIBEs refused with ERROR and a close, by reason (not_enabled, watch_limit: -presence-max-watches, info_invalid: -presence-max-info or not UTF-8, store_error).", "reason").WithLabelValues)
	m.presence.truncated = b.counter("stompgate_presence_truncated_total",
		"Presence snapshots that listed -presence-max-members of more members (the count still counts all).")
	m.presence.storeErrors = b.counter("stompgate_presence_store_errors_total",
		"Presence store calls that failed (Redis unreachable or slower than its timeout).")
	m.presence.dropped = b.counter("stompgate_presence_dropped_total",
		"Presence event messages from Redis dropped unread: too large or malformed.")
}

// PresenceEvent counts a join or leave received
// (stompgate_presence_events_total{op}).
func (m *Metrics) PresenceEvent(op string) {
	if m == nil {
		return
	}
	m.presence.events[labelIndex(presenceOpLabels, op)].Inc()
}

// PresenceFrame counts a presence frame queued for a watcher
// (stompgate_presence_frames_total{kind}).
func (m *Metrics) PresenceFrame(kind string) {
	if m == nil {
		return
	}
	m.presence.frames[labelIndex(presenceFrameLabels, kind)].Inc()
}

// PresenceRefused counts a refused presence SUBSCRIBE
// (stompgate_presence_refused_total{reason}).
func (m *Metrics) PresenceRefused(reason string) {
	if m == nil {
		return
	}
	m.presence.refused[labelIndex(presenceRefusalLabels, reason)].Inc()
}

// PresenceTruncated counts a snapshot cut to its member limit
// (stompgate_presence_truncated_total).
func (m *Metrics) PresenceTruncated() {
	if m == nil {
		return
	}
	m.presence.truncated.Inc()
}

// PresenceStoreError counts a failed presence store call
// (stompgate_presence_store_errors_total).
func (m *Metrics) PresenceStoreError() {
	if m == nil {
		return
	}
	m.presence.storeErrors.Inc()
}

// PresenceDropped counts an event message dropped unread
// (stompgate_presence_dropped_total).
func (m *Metrics) PresenceDropped() {
	if m == nil {
		return
	}
	m.presence.dropped.Inc()
}
