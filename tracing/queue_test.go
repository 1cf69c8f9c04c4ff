package tracing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stompgate/stompgate/internal/syncbuf"
)

// stuckExporter holds every export until release is closed, as a
// collector that does not answer does, and counts the spans it took.
type stuckExporter struct {
	release chan struct{}
	started chan struct{} // gets a value when an export begins
	spans   atomic.Int64
}

func (e *stuckExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	select {
	case e.started <- struct{}{}:
	default:
	}
	<-e.release
	e.spans.Add(int64(len(spans)))
	return nil
}

func (e *stuckExporter) Shutdown(context.Context) error { return nil }

// A collector that does not answer makes spans beyond MaxQueueSize be
// dropped and counted, never wait: every SEND returns, and every span is
// exported, failed or dropped, none lost uncounted.
func TestQueueBoundDropsAndCounts(t *testing.T) {
	t.Parallel()
	exp := &stuckExporter{release: make(chan struct{}), started: make(chan struct{}, 1)}
	const bound, n = 8, 200
	tr, err := New(Config{Exporter: exp, SampleRatio: 1, MaxQueueSize: bound, BatchTimeout: time.Millisecond, MaxTracesPerSecond: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, end := tr.Send("/topic/a")
	end()
	<-exp.started // the first export is stuck with its one span
	for range n - 1 {
		_, end := tr.Send("/topic/a")
		end()
	}
	st := tr.Stats()
	if st.Dropped < n-bound {
		t.Errorf("dropped %d spans with %d ended and a queue of %d stuck; want at least %d", st.Dropped, n, bound, n-bound)
	}
	close(exp.release)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = tr.Stats()
	if got := st.Exported + st.Failed + st.Dropped; got != n || int64(st.Exported) != exp.spans.Load() {
		t.Errorf("stats %+v account for %d of %d spans (exporter took %d)", st, got, n, exp.spans.Load())
	}
}

// failingExporter fails while fail is set.
type failingExporter struct{ fail atomic.Bool }

func (e *failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	if e.fail.Load() {
		return errors.New("collector down")
	}
	return nil
}

func (e *failingExporter) Shutdown(context.Context) error { return nil }

// Failed exports are counted, and logged once when they start and once
// when they end, not once per batch.
func TestExportFailuresLoggedOnce(t *testing.T) {
	t.Parallel()
	exp := &failingExporter{}
	exp.fail.Store(true)
	var log syncbuf.Buffer
	tr, err := New(Config{Exporter: exp, SampleRatio: 1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	for range 3 {
		_, end := tr.Send("/topic/a")
		end()
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	exp.fail.Store(false)
	_, end := tr.Send("/topic/a")
	end()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := tr.Stats(); st.Failed != 3 || st.Exported != 1 || st.Dropped != 0 {
		t.Errorf("stats %+v; want 3 failed, 1 exported", st)
	}
	out := log.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "level=INFO") != 1 {
		t.Errorf("log:\n%s\nwant one warning and one recovery", out)
	}
}

// Spans reach an OTLP/HTTP collector at the endpoint's /v1/traces, in
// protobuf; a collector that refuses them makes the export fail, counted.
func TestOTLPEndpoint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	status := http.StatusOK
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		st := status
		mu.Unlock()
		if len(body) == 0 {
			st = http.StatusBadRequest
		}
		w.WriteHeader(st)
	}))
	defer collector.Close()
	tr, err := New(Config{Endpoint: collector.URL, SampleRatio: 1, ExportTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, end := tr.Send("/topic/a")
	end()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(paths, "; ")
	status = http.StatusForbidden // not retried
	mu.Unlock()
	if got != "POST /v1/traces application/x-protobuf" {
		t.Errorf("collector saw %q", got)
	}
	_, end = tr.Send("/topic/a")
	end()
	_ = tr.ForceFlush(context.Background())
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := tr.Stats(); st.Exported != 1 || st.Failed != 1 {
		t.Errorf("stats %+v; want 1 exported, 1 failed", st)
	}
	collector.CloseClientConnections()
}
