package tracing

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/server"
)

// newTest returns a Tracer at ratio exporting to memory, shut down when
// the test ends.
func newTest(t *testing.T, ratio float64) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Config{Exporter: exp, SampleRatio: ratio, MaxTracesPerSecond: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

// spans flushes tr and returns what it exported.
func spans(t *testing.T, tr *Tracer, exp *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return exp.GetSpans()
}

func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// A SEND's traceparent names its span; a delivery given it is that
// span's child, in the same trace.
func TestSendThenDeliver(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 1)
	tp, end := tr.Send("/topic/a")
	if end == nil || !broker.ValidTrace(tp) {
		t.Fatalf("Send at ratio 1 = %q, %v; want a valid traceparent and an end", tp, end != nil)
	}
	tr.Deliver(tp, "/topic/a")()
	end()
	got := spans(t, tr, exp)
	if len(got) != 2 {
		t.Fatalf("exported %d spans, want 2", len(got))
	}
	deliver, send := got[0], got[1]
	if send.Name != SpanSend || deliver.Name != SpanDeliver {
		t.Fatalf("span names %q, %q; want %q, %q", deliver.Name, send.Name, SpanDeliver, SpanSend)
	}
	if traceparent(send.SpanContext) != tp {
		t.Errorf("send span %s, traceparent %s", traceparent(send.SpanContext), tp)
	}
	if deliver.SpanContext.TraceID() != send.SpanContext.TraceID() || deliver.Parent.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("deliver span trace %s parent %s; want trace %s parent %s", deliver.SpanContext.TraceID(), deliver.Parent.SpanID(),
			send.SpanContext.TraceID(), send.SpanContext.SpanID())
	}
	if v, _ := attr(deliver, AttrDestination); v.AsString() != "/topic/a" {
		t.Errorf("deliver destination = %q", v.AsString())
	}
	if send.SpanKind != trace.SpanKindProducer || deliver.SpanKind != trace.SpanKindConsumer {
		t.Errorf("kinds %v, %v; want producer, consumer", send.SpanKind, deliver.SpanKind)
	}
}

// At ratio 0 nothing starts a trace, but a trace another instance
// started is continued.
func TestRatioZeroStartsNothing(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 0)
	for range 1000 {
		if end := tr.Connect(); end != nil {
			t.Fatal("Connect sampled at ratio 0")
		}
		if end := tr.Subscribe("/topic/a"); end != nil {
			t.Fatal("Subscribe sampled at ratio 0")
		}
		if tp, end := tr.Send("/topic/a"); end != nil || tp != "" {
			t.Fatal("Send sampled at ratio 0")
		}
		if tp, end := tr.Publish("", "/topic/a"); end != nil || tp != "" {
			t.Fatal("Publish sampled at ratio 0")
		}
	}
	const remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tr.Deliver(remote, "/topic/a")()
	got := spans(t, tr, exp)
	if len(got) != 1 || got[0].Parent.TraceID().String() != remote[3:35] || got[0].Parent.SpanID().String() != remote[36:52] {
		t.Fatalf("spans %+v; want one delivery, child of %s", got, remote)
	}
}

// A delivery whose trace was not sampled, or is not a traceparent,
// records nothing.
func TestDeliverRecordsOnlySampled(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 1)
	for _, tp := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
		"", "garbage", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
	} {
		end := tr.Deliver(tp, "/topic/a")
		if end == nil {
			t.Fatalf("Deliver(%q) returned nil", tp)
		}
		end()
	}
	if got := spans(t, tr, exp); len(got) != 0 {
		t.Errorf("exported %d spans, want none", len(got))
	}
}

// An API caller's sampled traceparent is the publish span's parent, at
// any ratio; an unsampled one is respected at any ratio too.
func TestPublishFollowsCaller(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 0)
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tp, end := tr.Publish(caller, "/topic/a")
	if end == nil {
		t.Fatal("Publish with a sampled parent not sampled")
	}
	end(3)
	got := spans(t, tr, exp)
	if len(got) != 1 || got[0].Name != SpanPublish {
		t.Fatalf("spans %+v; want one %s", got, SpanPublish)
	}
	s := got[0]
	if s.Parent.SpanID().String() != caller[36:52] || s.SpanContext.TraceID().String() != caller[3:35] || traceparent(s.SpanContext) != tp {
		t.Errorf("publish span %s parent %s; want in trace %s under %s, named by %s", traceparent(s.SpanContext), s.Parent.SpanID(), caller[3:35], caller[36:52], tp)
	}
	if v, _ := attr(s, AttrDelivered); v.AsInt64() != 3 {
		t.Errorf("delivered = %d, want 3", v.AsInt64())
	}
	tr1, _ := newTest(t, 1)
	if tp, end := tr1.Publish(caller[:53]+"00", "/topic/a"); end != nil || tp != "" {
		t.Error("Publish with an unsampled parent sampled")
	}
}

// A CONNECT's span says its result and session, and nothing of who
// connected; a refused one is an error.
func TestConnectSpan(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 1)
	tr.Connect()(server.TraceOK, "s-1")
	tr.Connect()("auth_failed", "s-2")
	got := spans(t, tr, exp)
	if len(got) != 2 {
		t.Fatalf("exported %d spans, want 2", len(got))
	}
	for i, want := range []struct {
		result, session string
		code            codes.Code
	}{{server.TraceOK, "s-1", codes.Unset}, {"auth_failed", "s-2", codes.Error}} {
		s := got[i]
		r, _ := attr(s, AttrResult)
		sess, _ := attr(s, AttrSession)
		if s.Name != SpanConnect || r.AsString() != want.result || sess.AsString() != want.session || s.Status.Code != want.code {
			t.Errorf("span %d: %s result %q session %q status %v; want %+v", i, s.Name, r.AsString(), sess.AsString(), s.Status.Code, want)
		}
		if len(s.Attributes) != 2 {
			t.Errorf("span %d has attributes %v; want result and session only", i, s.Attributes)
		}
	}
}

// A destination a client chose is cut to MaxAttributeLength bytes.
func TestAttributeBound(t *testing.T) {
	t.Parallel()
	tr, exp := newTest(t, 1)
	long := "/topic/" + string(make([]byte, 4000))
	tr.Subscribe(long)(server.TraceOK)
	got := spans(t, tr, exp)
	if v, _ := attr(got[0], AttrDestination); len(v.AsString()) != MaxAttributeLength {
		t.Errorf("destination attribute of %d bytes, want %d", len(v.AsString()), MaxAttributeLength)
	}
}

// About ratio of the frames start a trace. The bounds are 10 standard
// deviations wide: the test fails on a broken draw, not on chance.
func TestSampleRatio(t *testing.T) {
	t.Parallel()
	tr, _ := newTest(t, 0.25)
	const n = 20000
	hits := 0
	for range n {
		if tr.sample() {
			hits++
		}
	}
	sd := math.Sqrt(n * 0.25 * 0.75)
	if math.Abs(float64(hits)-n*0.25) > 10*sd {
		t.Errorf("%d of %d sampled at ratio 0.25", hits, n)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	for _, tt := range []struct {
		name string
		cfg  Config
	}{
		{"no endpoint", Config{}},
		{"not a URL scheme", Config{Endpoint: "127.0.0.1:4318"}},
		{"ftp", Config{Endpoint: "ftp://collector"}},
		{"no host", Config{Endpoint: "http://"}},
		{"negative ratio", Config{Exporter: exp, SampleRatio: -0.1}},
		{"ratio above 1", Config{Exporter: exp, SampleRatio: 1.5}},
		{"NaN ratio", Config{Exporter: exp, SampleRatio: math.NaN()}},
		{"negative queue", Config{Exporter: exp, MaxQueueSize: -1}},
		{"negative batch timeout", Config{Exporter: exp, BatchTimeout: -1}},
		{"negative export timeout", Config{Exporter: exp, ExportTimeout: -1}},
	} {
		if _, err := New(tt.cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

func TestTracesURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":            "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":           "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/custom/path": "https://otel.example/custom/path",
	} {
		if got := tracesURL(in); got != want {
			t.Errorf("tracesURL(%q) = %q, want %q", in, got, want)
		}
	}
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)

// MaxTracesPerSecond caps the traces started in each second, whatever
// the ratio, and counts the frames it kept untraced; a trace started
// elsewhere is continued beyond it.
func TestMaxTracesPerSecond(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Config{Exporter: exp, SampleRatio: 1, MaxTracesPerSecond: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	t0 := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	now := t0
	tr.now = func() time.Time { return now }
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {100 * time.Millisecond, true}, {900 * time.Millisecond, true},
		{999 * time.Millisecond, false}, // the fourth in the second
		{time.Second, true}, {time.Second, true}, {1500 * time.Millisecond, true},
		{1999 * time.Millisecond, false},
		{5 * time.Second, true},
	} {
		now = t0.Add(step.at)
		_, end := tr.Send("/topic/a")
		if got := end != nil; got != step.want {
			t.Errorf("at +%v: traced %v, want %v", step.at, got, step.want)
		}
		if end != nil {
			end()
		}
	}
	if st := tr.Stats(); st.Capped != 2 {
		t.Errorf("Capped = %d, want 2", st.Capped)
	}
	tr.Deliver("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "/topic/a")()
	if got := spans(t, tr, exp); len(got) != 8 {
		t.Errorf("exported %d spans, want 7 SENDs and the delivery past the cap", len(got))
	}
}
