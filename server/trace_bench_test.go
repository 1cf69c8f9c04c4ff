package server_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
	"github.com/stompgate/stompgate/tracing"
)

// discardSpans is an exporter that takes every span and keeps none.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// sendBench is BenchmarkHandleSend's session on a server with the
// tracing package's Tracer at ratio (none when ratio is negative),
// capped at maxTraces a second (0: the default cap; negative: none).
type sendBench struct {
	handle func(*stompframe.Frame, time.Time) bool
	f      *stompframe.Frame
	t0     time.Time
	i      int
}

func newSendBench(b *testing.B, ratio float64, maxTraces int) *sendBench {
	b.Helper()
	var cfg server.Config
	if ratio >= 0 {
		tr, err := tracing.New(tracing.Config{Exporter: discardSpans{}, SampleRatio: ratio, MaxTracesPerSecond: maxTraces})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		cfg.Tracer = tr
	}
	srv, err := server.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	handle, stop := server.BenchSendHandler(srv, "/topic/room", t0)
	b.Cleanup(stop)
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("hello, room")}
	f.Add("destination", "/topic/room")
	f.Add("content-type", "text/plain")
	return &sendBench{handle: handle, f: f, t0: t0}
}

// run handles n SENDs and returns how long they took.
func (s *sendBench) run(b *testing.B, n int) time.Duration {
	start := time.Now()
	for range n {
		s.i++
		if s.handle(s.f, s.t0.Add(time.Duration(s.i))) {
			b.Fatal("session ended")
		}
	}
	return time.Since(start)
}

// BenchmarkHandleSendTraced is BenchmarkHandleSend without a Tracer and
// with package tracing's at -otel-sample-ratio 0 (the hooks alone), 0.01
// and 1, uncapped (spans exported to nowhere): ratio=1 is what a traced
// SEND costs, its span and its local delivery's.
func BenchmarkHandleSendTraced(b *testing.B) {
	for _, bc := range []struct {
		name  string
		ratio float64 // negative: no Tracer
	}{{"off", -1}, {"ratio=0", 0}, {"ratio=0.01", 0.01}, {"ratio=1", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			s := newSendBench(b, bc.ratio, -1)
			b.ReportAllocs()
			for b.Loop() {
				s.run(b, 1)
			}
		})
	}
}

// tracingChunk is how many SENDs each side of BenchmarkTracingOverhead
// handles in turn: about a millisecond, short enough that the load of
// a shared machine changes little between the two sides, long enough
// that 1 % sampling traces about 20 of them.
const tracingChunk = 2000

// BenchmarkTracingOverhead measures what the Tracer at its defaults
// (ratio 0.01, 100 traces a second) costs BenchmarkHandleSend's path,
// on a shared machine
// whose load drifts: it alternates chunks of tracingChunk SENDs without
// and with the Tracer (each side first in turn) and reports as
// overhead-% the median of the chunk pairs' time ratios (0 means no
// cost), which a neighbour's burst in one chunk does not move; beside
// it the ratio of the summed times, which it does, and each side's mean
// ns per SEND. Run it with -count and quote the spread.
func BenchmarkTracingOverhead(b *testing.B) {
	off, on := newSendBench(b, -1, 0), newSendBench(b, tracing.DefaultSampleRatio, 0)
	off.run(b, tracingChunk) // warm both before timing
	on.run(b, tracingChunk)
	var ratios []float64
	var tOff, tOn time.Duration
	for b.Loop() {
		var dOff, dOn time.Duration
		if len(ratios)%2 == 0 {
			dOff = off.run(b, tracingChunk)
			dOn = on.run(b, tracingChunk)
		} else {
			dOn = on.run(b, tracingChunk)
			dOff = off.run(b, tracingChunk)
		}
		tOff += dOff
		tOn += dOn
		ratios = append(ratios, float64(dOn)/float64(dOff))
	}
	slices.Sort(ratios)
	n := float64(len(ratios) * tracingChunk)
	b.ReportMetric((ratios[len(ratios)/2]-1)*100, "overhead-%")
	b.ReportMetric((float64(tOn)/float64(tOff)-1)*100, "overhead-of-sums-%")
	b.ReportMetric(float64(tOff.Nanoseconds())/n, "off-ns/send")
	b.ReportMetric(float64(tOn.Nanoseconds())/n, "traced-ns/send")
}
