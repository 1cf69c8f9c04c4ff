package server_test

import (
	"context"
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

// BenchmarkHandleSendTraced is BenchmarkHandleSend without a Tracer and
// with package tracing's at -otel-sample-ratio 0.01 and 1 (spans
// exported to nowhere): what tracing costs a SEND, including its
// delivery span, at the default ratio and at worst. Run with -count so
// that the cases alternate, and compare their ns/op.
func BenchmarkHandleSendTraced(b *testing.B) {
	for _, bc := range []struct {
		name  string
		ratio float64 // negative: no Tracer
	}{{"off", -1}, {"ratio=0.01", 0.01}, {"ratio=1", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			var cfg server.Config
			if bc.ratio >= 0 {
				tr, err := tracing.New(tracing.Config{Exporter: discardSpans{}, SampleRatio: bc.ratio})
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
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if handle(f, t0.Add(time.Duration(i))) {
					b.Fatal("session ended")
				}
			}
		})
	}
}
