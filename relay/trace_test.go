package relay

import (
	"slices"
	"sync"
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

const testTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A message's trace crosses the wire beside its headers, not among them,
// signed or not.
func TestCodecTrace(t *testing.T) {
	t.Parallel()
	hs := []stompframe.Header{{Name: "a", Value: "b"}}
	for _, key := range []string{"", testKey} {
		s := testSigner(t, key)
		for _, trace := range []string{"", testTrace} {
			m := broker.NewMessageParts("id", "/topic/x", hs, []byte("body"))
			m.Trace = trace
			w, reason := decodeMessage(string(appendMessage(nil, s, t0, "inst", m)), "other", s, t0)
			if reason != "" {
				t.Fatalf("signed=%v trace=%q: decodeMessage: %s", key != "", trace, reason)
			}
			if w.trace != trace || !slices.Equal(w.headers, hs) || string(w.body) != "body" {
				t.Errorf("signed=%v: got trace %q headers %q body %q, want %q, %q, body", key != "", w.trace, w.headers, w.body, trace, hs)
			}
		}
	}
}

// A trace header that is not a valid traceparent (an older instance
// passing a client's header on, or a forgery) is dropped alone: the
// message is delivered, untraced.
func TestDecodeInvalidTrace(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "00-zz", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", testTrace + " "} {
		hs := []stompframe.Header{{Name: "a", Value: "b"}, {Name: broker.TraceHeader, Value: bad}}
		p := string(appendMessage(nil, nil, t0, "inst", broker.NewMessageParts("id", "/d", hs, nil)))
		w, reason := decodeMessage(p, "other", nil, t0)
		if reason != "" {
			t.Fatalf("trace %q: decodeMessage: %s", bad, reason)
		}
		if w.trace != "" || !slices.Equal(w.headers, hs[:1]) {
			t.Errorf("trace %q: got trace %q headers %q, want none and %q", bad, w.trace, w.headers, hs[:1])
		}
	}
}

// recordingTracer records the deliveries a relay traces, as
// "traceparent destination", in the order their spans ended.
type recordingTracer struct {
	mu   sync.Mutex // guards ends
	ends []string
}

func (r *recordingTracer) Deliver(traceparent, dest string) func() {
	return func() {
		r.mu.Lock()
		r.ends = append(r.ends, traceparent+" "+dest)
		r.mu.Unlock()
	}
}

func (r *recordingTracer) delivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ends)
}
