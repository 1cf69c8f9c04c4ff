package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// AdmissionReason is the reason label of
// stompgate_admission_refused_total: why the instance refused a new
// session.
type AdmissionReason uint8

// The admission refusal reasons. A value outside this list is counted
// as "other".
const (
	// AdmissionOther is a reason this package does not name.
	AdmissionOther AdmissionReason = iota
	// AdmissionSessions: the instance holds -max-sessions.
	AdmissionSessions
	// AdmissionRate: the instance-wide bucket (-admit-rate) is empty.
	AdmissionRate
	// AdmissionMemory: memory is above -memory-admit-threshold of
	// -memory-limit.
	AdmissionMemory
)

// The label values come from package outcome, where package admission
// takes them too.
var admissionReasonLabels = append([]string{labelOther}, outcome.AdmissionReasons()...)

// AdmissionReasonOf returns the AdmissionReason of a reason the
// admission gate reported (outcome.Admission*); anything else is
// AdmissionOther.
func AdmissionReasonOf(reason string) AdmissionReason {
	return enumOf[AdmissionReason](admissionReasonLabels, reason)
}

// String returns the label value r is counted under.
func (r AdmissionReason) String() string { return labelOf(admissionReasonLabels, r) }

// admissionMetrics are the instance admission's counters; its gauges
// are read at the scrape (NewAdmissionCollector).
type admissionMetrics struct {
	refused  []prometheus.Counter
	admitted prometheus.Counter
}

func (m *Metrics) buildAdmission(b *builder) {
	refused := b.counterVec("stompgate_admission_refused_total",
		"WebSocket handshakes (and probes of the WebSocket path) the instance refused with 503 before any WebSocket work, by reason: sessions (-max-sessions held), rate (-admit-rate bucket empty), memory (above -memory-admit-threshold of -memory-limit).",
		"reason")
	m.admission.refused = resolveAll(admissionReasonLabels, refused.WithLabelValues)
	m.admission.admitted = b.counter("stompgate_admission_admitted_total",
		"WebSocket handshakes the instance admission let through to the server (each took a token of -admit-rate and a slot of -max-sessions).")
}

// AdmissionRefused counts a refusal (stompgate_admission_refused_total{reason}).
func (m *Metrics) AdmissionRefused(r AdmissionReason) {
	if m == nil {
		return
	}
	m.admission.refused[known(admissionReasonLabels, r)].Inc()
}

// AdmissionAdmitted counts a handshake let through
// (stompgate_admission_admitted_total).
func (m *Metrics) AdmissionAdmitted() {
	if m == nil {
		return
	}
	m.admission.admitted.Inc()
}

// AdmissionStats is what NewAdmissionCollector reads at each scrape:
// the admission gate's state (admission.State) converted field for
// field, so that metrics needs no import of admission.
type AdmissionStats struct {
	// Sessions is the sessions the gate holds; MaxSessions its cap (0:
	// none).
	Sessions, MaxSessions int
	// MemoryUsed is the last memory figure read; MemoryLimit the limit
	// (0: no memory guard).
	MemoryUsed, MemoryLimit uint64
	// Refusing is why new sessions are refused now whatever the rate
	// (outcome.AdmissionSessions or AdmissionMemory), or empty.
	Refusing string
	// Backlog is the refused clients told to come back and not yet due.
	Backlog int
	// PeakAdmitted is the most sessions admitted within any 100 ms
	// since the process started (admission.State.PeakAdmitted).
	PeakAdmitted int
}

// NewAdmissionCollector returns a collector that reads the admission
// state at each scrape and exposes it as gauges:
//
//   - stompgate_admission_sessions: sessions the gate holds.
//   - stompgate_admission_max_sessions: -max-sessions (0: no cap).
//   - stompgate_admission_memory_bytes: the memory figure the guard last
//     read (0 without -memory-limit).
//   - stompgate_admission_memory_limit_bytes: -memory-limit (0: none).
//   - stompgate_admission_refusing{reason}: 1 for the reason new
//     sessions are refused now (sessions, memory), else 0.
//   - stompgate_admission_retry_backlog: refused clients told to come
//     back and not yet due.
//   - stompgate_admission_peak_admitted: the most sessions admitted
//     within any 100 ms since the process started.
//
// Register it on the same registerer as New's collectors. stats must be
// safe for concurrent use, as (*admission.Gate).State is.
func NewAdmissionCollector(stats func() AdmissionStats) prometheus.Collector {
	return &admissionCollector{stats: stats}
}

// refusingLabels are the reasons stompgate_admission_refusing has a
// series for: the lasting ones (an empty bucket refills within a second).
var refusingLabels = []string{outcome.AdmissionSessions, outcome.AdmissionMemory}

var (
	admissionSessionsDesc = prometheus.NewDesc("stompgate_admission_sessions",
		"Sessions the instance admission holds (admitted, not yet ended).", nil, nil)
	admissionMaxDesc = prometheus.NewDesc("stompgate_admission_max_sessions",
		"The most sessions the instance admits at once (-max-sessions); 0 when there is no cap.", nil, nil)
	admissionMemoryDesc = prometheus.NewDesc("stompgate_admission_memory_bytes",
		"The memory in use as the admission's memory guard last read it (Go runtime total less heap released); 0 without -memory-limit.", nil, nil)
	admissionMemoryLimitDesc = prometheus.NewDesc("stompgate_admission_memory_limit_bytes",
		"The memory limit the admission guards (-memory-limit or GOMEMLIMIT); 0 when there is none.", nil, nil)
	admissionRefusingDesc = prometheus.NewDesc("stompgate_admission_refusing",
		"1 while the instance refuses every new session for this reason (sessions: -max-sessions held; memory: above -memory-admit-threshold), else 0. /readyz answers 503 meanwhile.", []string{"reason"}, nil)
	admissionBacklogDesc = prometheus.NewDesc("stompgate_admission_retry_backlog",
		"Refused clients told to come back within -retry-after-max and not yet due: the pressure the Retry-After window grows with.", nil, nil)
	admissionPeakDesc = prometheus.NewDesc("stompgate_admission_peak_admitted",
		"The most sessions admitted within any 100 ms since the process started (at most 4096): the bucket holds it to -admit-rate/10 + -admit-burst.", nil, nil)
)

// admissionCollector is the prometheus.Collector of NewAdmissionCollector.
type admissionCollector struct {
	stats func() AdmissionStats
}

func (c *admissionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- admissionSessionsDesc
	ch <- admissionMaxDesc
	ch <- admissionMemoryDesc
	ch <- admissionMemoryLimitDesc
	ch <- admissionRefusingDesc
	ch <- admissionBacklogDesc
	ch <- admissionPeakDesc
}

func (c *admissionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(admissionSessionsDesc, float64(st.Sessions))
	gauge(admissionMaxDesc, float64(st.MaxSessions))
	gauge(admissionMemoryDesc, float64(st.MemoryUsed))
	gauge(admissionMemoryLimitDesc, float64(st.MemoryLimit))
	for _, r := range refusingLabels {
		v := 0.0
		if st.Refusing == r {
			v = 1
		}
		gauge(admissionRefusingDesc, v, r)
	}
	gauge(admissionBacklogDesc, float64(st.Backlog))
	gauge(admissionPeakDesc, float64(st.PeakAdmitted))
}
