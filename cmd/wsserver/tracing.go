package main

import (
	"context"
	"flag"
	"log/slog"
	"math"
	"net/url"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/tracing"
)

// Tracing: OpenTelemetry spans of CONNECTs, SUBSCRIBEs, SENDs, API
// publishes and every instance's deliveries, exported over OTLP/HTTP to
// -otel-endpoint; off without it (package tracing).

// The Tracer is what the server, the relay and the API take; checked
// here so that none of them imports the others.
var (
	_ server.Tracer = (*tracing.Tracer)(nil)
	_ relay.Tracer  = (*tracing.Tracer)(nil)
	_ api.Tracer    = (*tracing.Tracer)(nil)
)

// tracerShutdownTimeout bounds the export of the spans still queued at
// exit: a collector that is down must not hold the process up.
const tracerShutdownTimeout = 2 * time.Second

// tracingSettings are the tracing settings.
type tracingSettings struct {
	otelEndpoint    string
	otelSampleRatio float64
	otelMaxTraces   int
	otelServiceName string
	// otelExporter, when not nil, replaces the OTLP exporter; no flag
	// sets it (tests do).
	otelExporter sdktrace.SpanExporter
}

// tracingFlags registers the tracing settings.
func (s *settings) tracingFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.otelEndpoint, "otel-endpoint", "", "OpenTelemetry collector's OTLP/HTTP URL (http://127.0.0.1:4318 sends to its /v1/traces); empty: no tracing, at no cost")
	fs.Float64Var(&s.otelSampleRatio, "otel-sample-ratio", tracing.DefaultSampleRatio, "share of CONNECTs, SUBSCRIBEs, SENDs and API publishes that start a trace, from 0 to 1; a client's own traceparent never counts")
	fs.IntVar(&s.otelMaxTraces, "otel-max-traces-per-second", tracing.DefaultMaxTracesPerSecond, "most traces started per second, whatever the ratio and the traffic, so that a busy instance's tracing cost stays bounded (0: no cap)")
	fs.StringVar(&s.otelServiceName, "otel-service-name", tracing.DefaultServiceName, "service.name of the spans")
}

// validateTracing checks the settings tracingFlags registers.
func (s *settings) validateTracing() error {
	if r := s.otelSampleRatio; math.IsNaN(r) || r < 0 || r > 1 {
		return badSetting("otel-sample-ratio", r, "must be between 0 and 1")
	}
	if s.otelEndpoint != "" {
		u, err := url.Parse(s.otelEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return badSetting("otel-endpoint", maskSetting("otel-endpoint", s.otelEndpoint), "must be an http:// or https:// URL with a host, or empty")
		}
	}
	if s.otelMaxTraces < 0 {
		return badSetting("otel-max-traces-per-second", s.otelMaxTraces, "must not be negative (0: no cap)")
	}
	if s.otelServiceName == "" {
		return badSetting("otel-service-name", `""`, "must not be empty")
	}
	return nil
}

// newTracer builds the Tracer when -otel-endpoint is set; a.tracer stays
// nil otherwise.
func (a *app) newTracer(st *settings, logger *slog.Logger) error {
	if st.otelEndpoint == "" {
		return nil
	}
	maxTraces := st.otelMaxTraces
	if maxTraces == 0 {
		maxTraces = -1 // the flag's 0 is the library's "no cap"
	}
	t, err := tracing.New(tracing.Config{
		Endpoint:           st.otelEndpoint,
		Exporter:           st.otelExporter,
		SampleRatio:        st.otelSampleRatio,
		MaxTracesPerSecond: maxTraces,
		ServiceName:        st.otelServiceName,
		Logger:             logger,
	})
	if err != nil {
		return err
	}
	a.tracer = t
	a.registry.MustRegister(metrics.NewTracingCollector(func() metrics.TracingStats {
		st := t.Stats()
		return metrics.TracingStats{Exported: st.Exported, Failed: st.Failed, Dropped: st.Dropped, Capped: st.Capped}
	}))
	return nil
}

// serverTracer is a.tracer as the server takes it: a nil interface, not
// a nil pointer in one, without tracing.
func (a *app) serverTracer() server.Tracer {
	if a.tracer == nil {
		return nil
	}
	return a.tracer
}

// relayTracer is a.tracer as the relay takes it.
func (a *app) relayTracer() relay.Tracer {
	if a.tracer == nil {
		return nil
	}
	return a.tracer
}

// apiTracer is a.tracer as the API takes it.
func (a *app) apiTracer() api.Tracer {
	if a.tracer == nil {
		return nil
	}
	return a.tracer
}

// closeTracer exports what is still queued, within
// tracerShutdownTimeout, and stops the Tracer.
func (a *app) closeTracer() {
	if a.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracerShutdownTimeout)
	defer cancel()
	_ = a.tracer.Shutdown(ctx)
}
