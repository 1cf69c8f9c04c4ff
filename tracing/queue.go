package tracing

import (
	"context"
	"log/slog"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Stats counts what became of the sampled spans that ended.
type Stats struct {
	// Exported spans were accepted by the exporter.
	Exported uint64
	// Failed spans were in an export that failed (the collector down,
	// slow past ExportTimeout, or refusing them).
	Failed uint64
	// Dropped spans found MaxQueueSize spans waiting and were never
	// queued.
	Dropped uint64
	// Capped counts the frames drawn for a trace that MaxTracesPerSecond
	// kept from starting one.
	Capped uint64
}

// pending counts the spans between their end and the end of their
// export: queued, in the batch being built or being exported. bounded
// drops a span rather than take it past the bound, so the batch
// processor's own queue, as large as the bound, never fills and never
// drops a span uncounted.
type pending struct {
	n   atomic.Int64
	max int64
}

// bounded is the span processor in front of the batch processor.
type bounded struct {
	next    sdktrace.SpanProcessor
	pending *pending
	dropped atomic.Uint64
}

var _ sdktrace.SpanProcessor = (*bounded)(nil)

// OnStart does nothing: the batch processor takes spans at their end.
func (b *bounded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s when fewer than the bound are pending, and counts it
// dropped otherwise.
func (b *bounded) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if b.pending.n.Add(1) > b.pending.max {
		b.pending.n.Add(-1)
		b.dropped.Add(1)
		return
	}
	b.next.OnEnd(s)
}

// Shutdown exports what is queued and stops the batch processor.
func (b *bounded) Shutdown(ctx context.Context) error { return b.next.Shutdown(ctx) }

// ForceFlush exports what is queued.
func (b *bounded) ForceFlush(ctx context.Context) error { return b.next.ForceFlush(ctx) }

// counting wraps the exporter: it releases the spans it was handed from
// pending, counts them, and logs when exports start and stop failing. It
// answers nil, having told the log, so that the SDK does not report each
// failed batch again through its global error handler.
type counting struct {
	next     sdktrace.SpanExporter
	pending  *pending
	logger   *slog.Logger
	exported atomic.Uint64
	failed   atomic.Uint64
	failing  atomic.Bool
}

var _ sdktrace.SpanExporter = (*counting)(nil)

// ExportSpans exports spans through the wrapped exporter.
func (c *counting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.next.ExportSpans(ctx, spans)
	c.pending.n.Add(-int64(len(spans)))
	if err != nil {
		c.failed.Add(uint64(len(spans)))
		if !c.failing.Swap(true) {
			c.logger.Warn("tracing: exporting spans fails; they are dropped until an export succeeds", "err", err)
		}
		return nil
	}
	c.exported.Add(uint64(len(spans)))
	if c.failing.Swap(false) {
		c.logger.Info("tracing: exporting spans succeeds again")
	}
	return nil
}

// Shutdown shuts the wrapped exporter down.
func (c *counting) Shutdown(ctx context.Context) error { return c.next.Shutdown(ctx) }
