package tracing

import (
	"log/slog"
	"math"
	"net/url"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults, each with the reason for its value.
const (
	// DefaultSampleRatio is the share of CONNECTs, SUBSCRIBEs, SENDs and
	// API publishes that start a trace, as wsserver's -otel-sample-ratio
	// default: at 1 % a server handling 10,000 SENDs a second exports
	// about 100 traces a second (a few hundred spans with their
	// deliveries), enough to follow any kind of message, and the
	// throughput cost stays within the 3 % budget (BENCHMARKS.md).
	DefaultSampleRatio = 0.01
	// DefaultMaxTracesPerSecond caps the traces a Tracer starts per
	// second, whatever the ratio and the traffic: at 700,000 SENDs a
	// second on one instance 1 % would be 7,000 traces and 14,000 spans
	// a second, a third more CPU and a queue that overflows at once.
	// 100 traces a second, about 300 spans with their deliveries, fill
	// 1,500 of the queue's 2,048 places in a batch interval and cost
	// well under a millisecond of CPU a second; it is what the default
	// ratio gives at 10,000 SENDs a second.
	DefaultMaxTracesPerSecond = 100
	// DefaultServiceName is the service.name resource attribute.
	DefaultServiceName = "stompgate"
	// DefaultMaxQueueSize bounds the spans waiting for export. A span
	// holds about 1 KiB (its attributes cut to MaxAttributeLength), so
	// the queue holds at most about 2 MiB however long the collector is
	// down; it covers 20 s of the ~100 spans a second the default ratio
	// gives at 10,000 SENDs a second, four batch intervals.
	DefaultMaxQueueSize = 2048
	// DefaultMaxExportBatchSize is the most spans one export request
	// carries: a quarter of the queue, so that the queue fills only
	// when several exports in a row fail or lag.
	DefaultMaxExportBatchSize = 512
	// DefaultBatchTimeout is how long an ended span may wait before its
	// batch is exported, full or not: the OpenTelemetry default, which
	// keeps requests to the collector few.
	DefaultBatchTimeout = 5 * time.Second
	// DefaultExportTimeout bounds one export, retries included: a
	// collector on the same network answers in milliseconds; 10 s rides
	// out a restart without the queue growing past its bound (spans
	// are dropped, not held, meanwhile).
	DefaultExportTimeout = 10 * time.Second
	// MaxAttributeLength bounds every string attribute of a span, in
	// bytes: a destination is up to a header line (4 KiB) long and a
	// client chooses it; 256 bytes name any real one and keep a queued
	// span small.
	MaxAttributeLength = 256
)

// Config configures a Tracer. Either Endpoint or Exporter is required;
// every other zero field takes the default named in its comment.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP URL, such as
	// http://127.0.0.1:4318: spans go to its /v1/traces, or to its own
	// path when the URL has one. https URLs use TLS. Ignored when
	// Exporter is set.
	Endpoint string
	// Exporter, if not nil, receives the spans instead of an OTLP/HTTP
	// exporter: for tests (sdk/trace/tracetest.InMemoryExporter) and for
	// programs that export elsewhere. Shutdown shuts it down.
	Exporter sdktrace.SpanExporter
	// SampleRatio is the probability, from 0 to 1, that a CONNECT,
	// SUBSCRIBE, SEND or API publish starts a trace. Zero starts none:
	// only traces started elsewhere (by another instance, or by an API
	// caller's traceparent) are continued. wsserver's default is
	// DefaultSampleRatio. Outside 0..1 is an error.
	SampleRatio float64
	// MaxTracesPerSecond caps the traces the Tracer starts per second
	// (a fixed window), after the SampleRatio draw: a frame drawn beyond
	// it is not traced, and counted (Stats.Capped). Traces started
	// elsewhere are continued whatever the cap. Default
	// DefaultMaxTracesPerSecond; negative means no cap.
	MaxTracesPerSecond int
	// ServiceName is the service.name of every span. Default
	// DefaultServiceName.
	ServiceName string
	// MaxQueueSize bounds the ended spans waiting for export; a span
	// that finds it full is dropped and counted. Default
	// DefaultMaxQueueSize; negative is an error.
	MaxQueueSize int
	// BatchTimeout is how long an ended span waits, at most, before it is
	// exported. Default DefaultBatchTimeout; negative is an error.
	BatchTimeout time.Duration
	// ExportTimeout bounds one export. Default DefaultExportTimeout;
	// negative is an error.
	ExportTimeout time.Duration
	// Logger receives the start and the end of export failures. Nil
	// means slog.Default().
	Logger *slog.Logger
}

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.Exporter == nil {
		if c.Endpoint == "" {
			return c, configErrorf("Endpoint is empty and there is no Exporter")
		}
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, configErrorf("Endpoint %q is not an http:// or https:// URL with a host", c.Endpoint)
		}
	}
	if math.IsNaN(c.SampleRatio) || c.SampleRatio < 0 || c.SampleRatio > 1 {
		return c, configErrorf("SampleRatio %v is not between 0 and 1", c.SampleRatio)
	}
	if c.ServiceName == "" {
		c.ServiceName = DefaultServiceName
	}
	if c.MaxTracesPerSecond == 0 {
		c.MaxTracesPerSecond = DefaultMaxTracesPerSecond
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"BatchTimeout", &c.BatchTimeout, DefaultBatchTimeout},
		{"ExportTimeout", &c.ExportTimeout, DefaultExportTimeout},
	} {
		if *d.v < 0 {
			return c, configErrorf("%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.MaxQueueSize < 0 {
		return c, configErrorf("MaxQueueSize %d is negative", c.MaxQueueSize)
	}
	if c.MaxQueueSize == 0 {
		c.MaxQueueSize = DefaultMaxQueueSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// tracesURL is Endpoint with the OTLP traces path when it has no path of
// its own, as OTEL_EXPORTER_OTLP_ENDPOINT is read.
func tracesURL(endpoint string) string {
	u, _ := url.Parse(endpoint) // withDefaults checked it
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String()
}
