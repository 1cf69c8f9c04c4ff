package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// TracingStats is what NewTracingCollector reads at each scrape: the
// tracer's counts (tracing.Stats) converted field for field, so that
// metrics needs no import of tracing.
type TracingStats struct {
	// Exported, Failed and Dropped count the sampled spans by what
	// became of them (outcome.Span*).
	Exported, Failed, Dropped uint64
	// Capped counts the frames drawn for a trace that the per-second
	// cap (-otel-max-traces-per-second) kept from starting one.
	Capped uint64
}

// NewTracingCollector returns a collector that reads the tracer's counts
// at each scrape and exposes them as counters:
//
//   - stompgate_trace_spans_total{result}: sampled spans exported,
//     failed (in an export that failed) or dropped (the export queue
//     full).
//   - stompgate_traces_capped_total: frames drawn for a trace that
//     -otel-max-traces-per-second kept untraced.
//
// Register it, when tracing is on, on the same registerer as New's
// collectors. stats must be safe for concurrent use, as
// (*tracing.Tracer).Stats is.
func NewTracingCollector(stats func() TracingStats) prometheus.Collector {
	return &tracingCollector{stats: stats}
}

var (
	traceSpansDesc = prometheus.NewDesc("stompgate_trace_spans_total",
		"Sampled OpenTelemetry spans by what became of them: exported (the collector took them), failed (their export failed), dropped (the export queue was full; a collector that is down or slow costs these, never a wait).", []string{"result"}, nil)
	tracesCappedDesc = prometheus.NewDesc("stompgate_traces_capped_total",
		"Frames drawn for a trace at -otel-sample-ratio that -otel-max-traces-per-second kept untraced.", nil, nil)
)

// tracingCollector is the prometheus.Collector of NewTracingCollector.
type tracingCollector struct {
	stats func() TracingStats
}

func (c *tracingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- traceSpansDesc
	ch <- tracesCappedDesc
}

func (c *tracingCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	for _, r := range []struct {
		label string
		n     uint64
	}{{outcome.SpanExported, st.Exported}, {outcome.SpanFailed, st.Failed}, {outcome.SpanDropped, st.Dropped}} {
		ch <- prometheus.MustNewConstMetric(traceSpansDesc, prometheus.CounterValue, float64(r.n), r.label)
	}
	ch <- prometheus.MustNewConstMetric(tracesCappedDesc, prometheus.CounterValue, float64(st.Capped))
}
