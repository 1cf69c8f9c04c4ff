package broker

import (
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

func TestValidTrace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tp   string
		want bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},       // unknown version
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},       // uppercase
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},       // zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},       // zero parent id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", false},       // flags not hex
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false}, // too long
		{"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", false},       // separators
		{"00-4bf92f3577b34da6a3ce929d0e0e473\xff-00f067aa0ba902b7-01", false},    // not hex
	} {
		if got := ValidTrace(tt.tp); got != tt.want {
			t.Errorf("ValidTrace(%q) = %v, want %v", tt.tp, got, tt.want)
		}
	}
}

// TestNewMessageDropsClientTrace: a SEND's traceparent is the client's
// and never becomes the message's trace or one of its headers, so that a
// client cannot choose which of its messages the server traces.
func TestNewMessageDropsClientTrace(t *testing.T) {
	t.Parallel()
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte("x")}
	f.Add("destination", "/topic/a")
	f.Add(TraceHeader, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("kept", "yes")
	m := NewMessage("id-1", f)
	if m.Trace != "" {
		t.Errorf("Trace = %q, want empty", m.Trace)
	}
	for _, h := range m.Headers() {
		if h.Name == TraceHeader {
			t.Errorf("header %s passed through: %q", h.Name, h.Value)
		}
	}
	if len(m.Headers()) != 1 {
		t.Errorf("headers = %v, want only kept", m.Headers())
	}
}
