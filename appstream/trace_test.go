package appstream

import (
	"context"
	"testing"

	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/server"
)

// A traced message's traceparent is a field of its entry, which Parse
// returns; an untraced one has no such field.
func TestEntryCarriesTrace(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	h, err := New(Config{Client: c, Stream: "traced"})
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, trace := range []string{tp, ""} {
		if err := h.HandleApp(ctx, server.AppMessage{Destination: "/app/x", Principal: "p", Trace: trace}); err != nil {
			t.Fatalf("HandleApp: %v", err)
		}
	}
	entries, err := c.XRange(ctx, "traced", "-", "+").Result()
	if err != nil || len(entries) != 2 {
		t.Fatalf("XRANGE = %v, %v; want 2 entries", entries, err)
	}
	for i, want := range []string{tp, ""} {
		m, err := Parse(entries[i])
		if err != nil {
			t.Fatal(err)
		}
		if m.Traceparent != want {
			t.Errorf("entry %d: Traceparent = %q, want %q", i, m.Traceparent, want)
		}
		if _, ok := entries[i].Values["traceparent"]; ok != (want != "") {
			t.Errorf("entry %d: traceparent field present = %v, want %v", i, ok, want != "")
		}
	}
}
