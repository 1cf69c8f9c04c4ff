package tracing

import (
	"context"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/stompgate/stompgate/server"
)

// Span names: fixed, so that a backend groups spans by what they are,
// whatever the destination (an attribute).
const (
	SpanConnect   = "stomp.connect"
	SpanSubscribe = "stomp.subscribe"
	SpanSend      = "stomp.send"
	SpanDeliver   = "stomp.deliver"
	SpanPublish   = "api.publish"
)

// Attribute keys.
const (
	// AttrDestination is the destination a frame or message names.
	AttrDestination = attribute.Key("messaging.destination.name")
	// AttrResult is a CONNECT's or SUBSCRIBE's result: server.TraceOK or
	// the outcome.Close label of the close it caused.
	AttrResult = attribute.Key("stomp.result")
	// AttrSession is the session id a CONNECT opened (the CONNECTED
	// session header, random): it joins a trace to the server's log
	// lines, never to a person.
	AttrSession = attribute.Key("stomp.session")
	// AttrDelivered is the number of local subscribers that took an API
	// publish's message.
	AttrDelivered = attribute.Key("stomp.delivered")
)

// exportRetryInterval is the first pause between two tries of a failed
// export, doubled up to exportRetryMax within ExportTimeout.
const (
	exportRetryInterval = time.Second
	exportRetryMax      = 5 * time.Second
)

// Tracer records the spans of a server (see the package documentation).
// It is safe for concurrent use. Its methods implement server.Tracer,
// relay.Tracer and api.Tracer.
type Tracer struct {
	ratio    float64
	budget   budget
	now      func() time.Time
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	proc     *bounded
	exp      *counting
}

var _ server.Tracer = (*Tracer)(nil)

// New validates cfg and returns a Tracer exporting to cfg.Endpoint (or
// cfg.Exporter). It does not contact the collector: a collector that is
// down costs dropped spans, counted, not an error.
func New(cfg Config) (*Tracer, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	exp := c.Exporter
	if exp == nil {
		exp, err = otlptracehttp.New(context.Background(),
			otlptracehttp.WithEndpointURL(tracesURL(c.Endpoint)),
			otlptracehttp.WithTimeout(c.ExportTimeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
				InitialInterval: exportRetryInterval, MaxInterval: exportRetryMax, MaxElapsedTime: c.ExportTimeout}))
		if err != nil {
			return nil, configErrorf("Endpoint %q: %v", c.Endpoint, err)
		}
	}
	p := &pending{max: int64(c.MaxQueueSize)}
	ce := &counting{next: exp, pending: p, logger: c.Logger}
	bsp := sdktrace.NewBatchSpanProcessor(ce,
		sdktrace.WithMaxQueueSize(c.MaxQueueSize),
		sdktrace.WithMaxExportBatchSize(min(DefaultMaxExportBatchSize, c.MaxQueueSize)),
		sdktrace.WithBatchTimeout(c.BatchTimeout),
		sdktrace.WithExportTimeout(c.ExportTimeout))
	proc := &bounded{next: bsp, pending: p}
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = MaxAttributeLength
	provider := sdktrace.NewTracerProvider(
		// The Tracer draws for the traces it starts (sample); a span
		// with a parent follows the parent's decision.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", c.ServiceName))),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithSpanProcessor(proc),
	)
	return &Tracer{
		ratio:    c.SampleRatio,
		budget:   budget{max: int64(c.MaxTracesPerSecond)},
		now:      time.Now,
		provider: provider,
		tracer:   provider.Tracer("github.com/stompgate/stompgate/tracing"),
		proc:     proc,
		exp:      ce,
	}, nil
}

// Shutdown exports the spans still queued, within ctx, and stops the
// Tracer; spans that end afterwards are not recorded.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// ForceFlush exports the spans queued so far, within ctx.
func (t *Tracer) ForceFlush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Stats returns what became of the spans so far.
func (t *Tracer) Stats() Stats {
	return Stats{Exported: t.exp.exported.Load(), Failed: t.exp.failed.Load(), Dropped: t.proc.dropped.Load(),
		Capped: t.budget.capped.Load()}
}

// sample draws whether a frame starts a trace: one draw from the
// runtime's per-thread generator, no lock, no allocation; the clock is
// read, for the per-second cap, only when the draw says yes.
func (t *Tracer) sample() bool {
	switch {
	case t.ratio == 0:
		return false
	case t.ratio < 1 && rand.Float64() >= t.ratio:
		return false
	}
	return t.budget.take(t.now())
}

// root starts the span of a new trace.
func (t *Tracer) root(name string, kind trace.SpanKind, attrs ...attribute.KeyValue) trace.Span {
	_, span := t.tracer.Start(context.Background(), name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return span
}

// endWith sets a frame's result on span and ends it.
func endWith(span trace.Span, result string, attrs ...attribute.KeyValue) {
	span.SetAttributes(append(attrs, AttrResult.String(result))...)
	if result != server.TraceOK {
		span.SetStatus(codes.Error, result)
	}
	span.End()
}

// Connect starts the span of a sampled CONNECT (server.Tracer).
func (t *Tracer) Connect() func(result, session string) {
	if !t.sample() {
		return nil
	}
	span := t.root(SpanConnect, trace.SpanKindServer)
	return func(result, session string) { endWith(span, result, AttrSession.String(session)) }
}

// Subscribe starts the span of a sampled SUBSCRIBE (server.Tracer).
func (t *Tracer) Subscribe(dest string) func(result string) {
	if !t.sample() {
		return nil
	}
	span := t.root(SpanSubscribe, trace.SpanKindServer, AttrDestination.String(dest))
	return func(result string) { endWith(span, result) }
}

// Send starts the trace of a sampled SEND (server.Tracer).
func (t *Tracer) Send(dest string) (string, func()) {
	if !t.sample() {
		return "", nil
	}
	span := t.root(SpanSend, trace.SpanKindProducer, AttrDestination.String(dest))
	return traceparent(span.SpanContext()), func() { span.End() }
}

// noEnd is Deliver's answer for a delivery it does not record.
func noEnd() {}

// Deliver starts the span of a traced message's delivery on this
// instance, the child of the span traceparent names, when that one was
// sampled (server.Tracer, relay.Tracer).
func (t *Tracer) Deliver(tp, dest string) func() {
	sc, ok := parent(tp)
	if !ok || !sc.IsSampled() {
		return noEnd
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), sc)
	_, span := t.tracer.Start(ctx, SpanDeliver, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(AttrDestination.String(dest)))
	return func() { span.End() }
}

// Publish starts the span of an API publish (api.Tracer): the child of
// parent when it is a valid traceparent, sampled as it says; else the
// root of a new trace, sampled at the ratio.
func (t *Tracer) Publish(tp, dest string) (string, func(delivered int)) {
	ctx := context.Background()
	if sc, ok := parent(tp); ok {
		if !sc.IsSampled() {
			return "", nil
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	} else if !t.sample() {
		return "", nil
	}
	_, span := t.tracer.Start(ctx, SpanPublish, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrDestination.String(dest)))
	return traceparent(span.SpanContext()), func(n int) {
		span.SetAttributes(AttrDelivered.Int(n))
		span.End()
	}
}
