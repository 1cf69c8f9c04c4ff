package server

import (
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/stompframe"
)

// flushNothing is a Flusher that only fills a batch.
type flushNothing struct{}

func (flushNothing) Flush() {}

// A writer's start held by one publisher's batch is handed to the next
// publisher that delivers while it is unclaimed; the first flush claims
// it, later ones find nothing; a start that runs or a full batch is not
// handed on.
func TestDeferHandsTheStartOn(t *testing.T) {
	var o outbox
	var p, q, full broker.Batch
	for range broker.MaxBatched {
		full.Defer(flushNothing{})
	}
	steps := []struct {
		name  string
		start bool
		b     *broker.Batch
		want  bool
	}{
		{"no batch starts a goroutine", true, nil, false},
		{"a full batch starts a goroutine", true, &full, false},
		{"the push that starts the writer hands it to its batch", true, &p, true},
		{"the same batch again holds it already", false, &p, false},
		{"another publisher's batch takes it too", false, &q, true},
		{"and holds it", false, &q, false},
		{"the first publisher's batch takes it back", false, &p, true},
	}
	for _, s := range steps {
		if got := o.deferLocked(s.start, s.b); got != s.want {
			t.Errorf("%s: deferLocked = %v, want %v", s.name, got, s.want)
		}
	}
	if !o.claim() {
		t.Fatal("first claim = false, want true")
	}
	if o.claim() {
		t.Error("second claim = true, want false: one writer per start")
	}
	if o.deferLocked(false, &q) {
		t.Error("a push while the claimed writer runs was handed on, want not")
	}
}

// A publisher whose reader has not flushed its batch (stalled, say, by
// the machine) does not hold up another publisher's MESSAGE for the same
// session: the second publisher's flush writes both, and the first one's
// finds nothing left. The session then ends as usual.
func TestStalledBatchDoesNotHoldOthersDeliveries(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.url)
	s := ts.session(t, c.Connect().Get("session"))
	sub := broker.NewSubscription("x", "/topic/h", broker.AckAuto, stompframe.V12, s)
	message := func(id, body string) *broker.Message {
		f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte(body)}
		f.Add("destination", "/topic/h")
		return broker.NewMessage(id, f)
	}
	var stalled, next broker.Batch
	// Should the test fail before the stalled publisher flushes, its
	// flush still lets the session end.
	t.Cleanup(stalled.Flush)
	if !s.Deliver(sub, message("1", "one"), &stalled) || !s.Deliver(sub, message("2", "two"), &next) {
		t.Fatal("Deliver refused")
	}
	next.Flush()
	for _, want := range []string{"one", "two"} {
		if m := c.Expect("MESSAGE"); string(m.Body) != want {
			t.Fatalf("MESSAGE %q, want %q", m.Body, want)
		}
	}
	stalled.Flush()
	c.Send("DISCONNECT\nreceipt:bye\n\n\x00")
	if r := c.Expect("RECEIPT"); r.Get("receipt-id") != "bye" {
		t.Fatalf("RECEIPT %q, want bye", r.Get("receipt-id"))
	}
}
