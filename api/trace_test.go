package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stompgate/stompgate/server"
)

// recordingTracer is an api.Tracer and a server.Tracer that samples every
// publish with the traceparent it is given and records what the server
// delivers.
type recordingTracer struct {
	tp string // what Publish answers; "" samples nothing

	mu        sync.Mutex
	parents   []string // Publish's parent arguments
	delivered []string // Deliver's traceparents
	ends      []int    // Publish's end arguments
}

func (r *recordingTracer) Publish(parent, dest string) (string, func(int)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parents = append(r.parents, parent)
	if r.tp == "" {
		return "", nil
	}
	return r.tp, func(n int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ends = append(r.ends, n)
	}
}

func (r *recordingTracer) Connect() func(string, string) { return nil }
func (r *recordingTracer) Subscribe(string) func(string) { return nil }
func (r *recordingTracer) Send(string) (string, func())  { return "", nil }
func (r *recordingTracer) Deliver(tp, _ string) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, tp)
	return func() {}
}

var _ server.Tracer = (*recordingTracer)(nil)

// A sampled publish's message carries the span's traceparent to its
// delivery, the request's traceparent header is the span's parent, and
// the span ends with the delivery count. An unsampled one delivers its
// message untraced, unless the caller, who holds the key, put a
// traceparent among the message's headers.
func TestPublishTraced(t *testing.T) {
	const span = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tt := range []struct {
		name          string
		sampled       bool
		body          string
		wantDelivered []string
	}{
		{"sampled", true, `{"destination":"/topic/a","body":"x"}`, []string{span}},
		{"sampled, the caller's header second", true, `{"destination":"/topic/a","body":"x","headers":{"traceparent":"` + caller + `"}}`, []string{span}},
		{"not sampled", false, `{"destination":"/topic/a","body":"x"}`, nil},
		{"not sampled, the caller's own", false, `{"destination":"/topic/a","body":"x","headers":{"traceparent":"` + caller + `"}}`, []string{caller}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &recordingTracer{}
			if tt.sampled {
				rt.tp = span
			}
			srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler), Tracer: rt})
			if err != nil {
				t.Fatal(err)
			}
			h, err := New(Config{Server: srv, Key: "k", Tracer: rt, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", "/api/v1/publish", strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("traceparent", caller)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusAccepted {
				t.Fatalf("publish: %d %s", rec.Code, rec.Body)
			}
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if len(rt.parents) != 1 || rt.parents[0] != caller {
				t.Errorf("Publish parents %q, want the request's %q", rt.parents, caller)
			}
			if strings.Join(rt.delivered, ",") != strings.Join(tt.wantDelivered, ",") {
				t.Errorf("delivered with traces %q, want %q", rt.delivered, tt.wantDelivered)
			}
			if tt.sampled && (len(rt.ends) != 1 || rt.ends[0] != 0) {
				t.Errorf("span ended with %v, want [0] (no subscriber)", rt.ends)
			}
		})
	}
}
