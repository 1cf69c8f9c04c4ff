package outcome

// What became of a sampled span (stompgate_trace_spans_total{result},
// tracing.Stats).
const (
	// SpanExported: the collector accepted it.
	SpanExported = "exported"
	// SpanFailed: it was in an export that failed (the collector down,
	// slow past the export timeout, or refusing it).
	SpanFailed = "failed"
	// SpanDropped: it found the export queue full and was never queued.
	SpanDropped = "dropped"
)

// SpanResults returns every span result. The slice is a fresh copy.
func SpanResults() []string {
	return []string{SpanExported, SpanFailed, SpanDropped}
}
