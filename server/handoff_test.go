package server

import (
	"testing"

	"github.com/stompgate/stompgate/broker"
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
