package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/tracing"
)

// forgedTrace is a traceparent a client sends to make the server trace
// its message: valid, and marked sampled.
const forgedTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// tracedCluster starts n instances on redisURL with the relay and
// -otel-sample-ratio ratio, each exporting to its own memory exporter.
func tracedCluster(t *testing.T, n int, redisURL, ratio string, extra ...string) (cluster, []*tracetest.InMemoryExporter) {
	t.Helper()
	var c cluster
	var exps []*tracetest.InMemoryExporter
	for range n {
		exp := tracetest.NewInMemoryExporter()
		args := append([]string{"-redis-url", redisURL, "-relay", "redis",
			// Never dialled: the memory exporter replaces the OTLP one.
			"-otel-endpoint", "http://127.0.0.1:9", "-otel-sample-ratio", ratio}, extra...)
		base, a := startAppWith(t, appOptions{edit: func(st *settings) { st.otelExporter = exp }}, args...)
		if a.tracer == nil {
			t.Fatal("-otel-endpoint: app has no tracer")
		}
		c.bases = append(c.bases, base)
		c.apps = append(c.apps, a)
		exps = append(exps, exp)
	}
	return c, exps
}

// flushed exports what instance i's tracer holds and returns every span
// it exported so far.
func (c cluster) flushed(t *testing.T, exps []*tracetest.InMemoryExporter, i int) tracetest.SpanStubs {
	t.Helper()
	if err := c.apps[i].tracer.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exps[i].GetSpans()
}

// spansNamed returns the spans named name whose destination is dest.
func spansNamed(spans tracetest.SpanStubs, name, dest string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name != name {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == tracing.AttrDestination && a.Value.AsString() == dest {
				out = append(out, s)
			}
		}
	}
	return out
}

// noTraceHeader fails when a MESSAGE shows a traceparent.
func noTraceHeader(t *testing.T, where string, m *stomp.Message) {
	t.Helper()
	if v, ok := m.Header.Contains("traceparent"); ok {
		t.Errorf("MESSAGE %s carries traceparent %q", where, v)
	}
}

// TestTraceAcrossInstances runs two instances on a real Redis with the
// relay, sampling every frame. A SEND on A has its span on A, and its
// deliveries on A and on B are that span's children in the same trace;
// an app SEND's stream entry carries its span's traceparent; an API
// publish on A is the parent of the delivery on B. No MESSAGE shows the
// trace.
func TestTraceAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c, exps := tracedCluster(t, 2, rs.URL(), "1", "-api-key", "k3y", "-app-stream", "traced:in")
	const dest = "/topic/room.traced"
	onA := subscribe(t, dialStomp(t, wsURL(c.bases[0])), dest)
	onB := subscribe(t, dialStomp(t, wsURL(c.bases[1])), dest)
	c.waitRelaySubscribed(t, rdb, dest, false)

	pub := dialStomp(t, wsURL(c.bases[0]))
	if err := pub.Send(dest, "text/plain", []byte("one"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	noTraceHeader(t, "on A", nextMessage(t, onA))
	noTraceHeader(t, "on B", nextMessage(t, onB))

	sends := spansNamed(c.flushed(t, exps, 0), tracing.SpanSend, dest)
	if len(sends) != 1 {
		t.Fatalf("A exported %d SEND spans for %s, want 1", len(sends), dest)
	}
	send := sends[0].SpanContext
	var deliveries tracetest.SpanStubs
	waitFor(t, clientTimeout, func() error { // B's delivery span ends a moment after its MESSAGE is queued
		deliveries = spansNamed(c.flushed(t, exps, 1), tracing.SpanDeliver, dest)
		if len(deliveries) != 1 {
			return fmt.Errorf("B exported %d delivery spans, want 1", len(deliveries))
		}
		return nil
	})
	local := spansNamed(c.flushed(t, exps, 0), tracing.SpanDeliver, dest)
	if len(local) != 1 {
		t.Fatalf("A exported %d delivery spans, want 1", len(local))
	}
	for where, d := range map[string]tracetest.SpanStub{"A": local[0], "B": deliveries[0]} {
		if d.SpanContext.TraceID() != send.TraceID() || d.Parent.SpanID() != send.SpanID() {
			t.Errorf("delivery on %s: trace %s parent %s; want trace %s parent %s (the SEND on A)",
				where, d.SpanContext.TraceID(), d.Parent.SpanID(), send.TraceID(), send.SpanID())
		}
	}
	if !deliveries[0].Parent.IsRemote() {
		t.Error("delivery on B: its parent is not remote")
	}

	// An app SEND: its entry names the span of its SEND.
	if err := pub.Send("/app/move", "text/plain", []byte("e2e4"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	entries, err := rdb.XRange(context.Background(), "traced:in", "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("XRANGE traced:in = %v, %v; want 1 entry", entries, err)
	}
	m, err := appstream.Parse(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	appSends := spansNamed(c.flushed(t, exps, 0), tracing.SpanSend, "/app/move")
	if len(appSends) != 1 {
		t.Fatalf("A exported %d SEND spans for /app/move, want 1", len(appSends))
	}
	sc := appSends[0].SpanContext
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; m.Traceparent != want {
		t.Errorf("entry traceparent %q, want %q (the SEND's span)", m.Traceparent, want)
	}

	// An API publish on A: the delivery on B is its child.
	if code, v := apiCall(t, c.bases[0], "k3y", "POST", "/api/v1/publish", `{"destination":"`+dest+`","body":"two"}`); code != http.StatusAccepted {
		t.Fatalf("publish: %d %v", code, v)
	}
	noTraceHeader(t, "on B", nextMessage(t, onB))
	publishes := spansNamed(c.flushed(t, exps, 0), tracing.SpanPublish, dest)
	if len(publishes) != 1 {
		t.Fatalf("A exported %d publish spans, want 1", len(publishes))
	}
	waitFor(t, clientTimeout, func() error {
		deliveries = spansNamed(c.flushed(t, exps, 1), tracing.SpanDeliver, dest)
		if len(deliveries) != 2 {
			return fmt.Errorf("B exported %d delivery spans, want 2", len(deliveries))
		}
		return nil
	})
	if p, d := publishes[0].SpanContext, deliveries[1]; d.Parent.SpanID() != p.SpanID() || d.SpanContext.TraceID() != p.TraceID() {
		t.Errorf("delivery on B of the API publish: parent %s, want %s", d.Parent.SpanID(), p.SpanID())
	}
	// What the exporter took is counted, nothing dropped.
	exported := float64(len(c.flushed(t, exps, 0)))
	s := scrape(t, c.bases[0])
	if got := s.sum("stompgate_trace_spans_total", `result="exported"`); got != exported {
		t.Errorf("stompgate_trace_spans_total{result=exported} = %v, want %v", got, exported)
	}
	if got := s.sum("stompgate_trace_spans_total", `result="dropped"`) + s.sum("stompgate_traces_capped_total"); got != 0 {
		t.Errorf("dropped and capped = %v, want 0", got)
	}
}

// TestClientTraceparentForcesNothing: at -otel-sample-ratio 0, SENDs
// whose traceparent says "sampled", to a topic and to the app stream,
// start no trace on either instance, no span at all is exported, the
// subscriber on the other instance sees no traceparent and the app
// stream entry carries none.
func TestClientTraceparentForcesNothing(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c, exps := tracedCluster(t, 2, rs.URL(), "0", "-app-stream", "forged:in")
	const dest = "/topic/room.forged"
	onB := subscribe(t, dialStomp(t, wsURL(c.bases[1])), dest)
	c.waitRelaySubscribed(t, rdb, dest, false)
	pub := dialStomp(t, wsURL(c.bases[0]))
	forged := stomp.SendOpt.Header("traceparent", forgedTrace)
	const n = 10 // within the send limit, with the app SEND
	for range n {
		if err := pub.Send(dest, "text/plain", []byte("x"), forged); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Send("/app/move", "text/plain", []byte("x"), forged, stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	for range n {
		noTraceHeader(t, "on B", nextMessage(t, onB))
	}
	for i := range c.apps {
		if got := c.flushed(t, exps, i); len(got) != 0 {
			t.Errorf("instance %d exported %d spans, want none: %v", i, len(got), got[0].Name)
		}
	}
	entries, err := rdb.XRange(context.Background(), "forged:in", "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("XRANGE forged:in = %v, %v; want 1 entry", entries, err)
	}
	if v, ok := entries[0].Values["traceparent"]; ok {
		t.Errorf("app entry carries traceparent %v", v)
	}
}

// TestTracingOffNoTraceparent: without -otel-endpoint there is no
// tracer, and a client's traceparent reaches neither a local nor a
// relayed MESSAGE.
func TestTracingOffNoTraceparent(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c := startInstances(t, 2, rs.URL())
	for i, a := range c.apps {
		if a.tracer != nil {
			t.Fatalf("instance %d has a tracer without -otel-endpoint", i)
		}
		if n := scrape(t, c.bases[i]).sum("stompgate_trace_spans_total"); n != 0 {
			t.Errorf("instance %d counts %v spans without tracing", i, n)
		}
	}
	const dest = "/topic/room.off"
	onA := subscribe(t, dialStomp(t, wsURL(c.bases[0])), dest)
	onB := subscribe(t, dialStomp(t, wsURL(c.bases[1])), dest)
	c.waitRelaySubscribed(t, rdb, dest, false)
	pub := dialStomp(t, wsURL(c.bases[0]))
	if err := pub.Send(dest, "text/plain", []byte("x"), stomp.SendOpt.Header("traceparent", forgedTrace),
		stomp.SendOpt.Header("kept", "yes"), stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	for where, sub := range map[string]*stomp.Subscription{"on A": onA, "on B": onB} {
		m := nextMessage(t, sub)
		noTraceHeader(t, where, m)
		if m.Header.Get("kept") != "yes" {
			t.Errorf("MESSAGE %s lost its user header: %v", where, m.Header)
		}
	}
}

func TestTracingSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-otel-sample-ratio", "1.5"}, nil, "-otel-sample-ratio (WSSERVER_OTEL_SAMPLE_RATIO) 1.5: must be between 0 and 1"},
		{"", nil, map[string]string{"WSSERVER_OTEL_SAMPLE_RATIO": "-0.01"}, "-otel-sample-ratio (WSSERVER_OTEL_SAMPLE_RATIO) -0.01: must be between 0 and 1"},
		{"", []string{"-otel-endpoint", "127.0.0.1:4318"}, nil, "-otel-endpoint (WSSERVER_OTEL_ENDPOINT)"},
		{"", []string{"-otel-endpoint", "ftp://collector"}, nil, "must be an http:// or https:// URL with a host"},
		{"", []string{"-otel-service-name", ""}, nil, "-otel-service-name (WSSERVER_OTEL_SERVICE_NAME)"},
		{"", []string{"-otel-max-traces-per-second", "-1"}, nil, "-otel-max-traces-per-second (WSSERVER_OTEL_MAX_TRACES_PER_SECOND) -1: must not be negative"},
	})
}
