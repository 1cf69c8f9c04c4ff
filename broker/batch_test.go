package broker

import (
	"slices"
	"testing"

	"github.com/stompgate/stompgate/stompframe"
)

type flushRecorder struct {
	id  int
	log *[]int
}

func (f flushRecorder) Flush() { *f.log = append(*f.log, f.id) }

func TestBatch(t *testing.T) {
	var nilBatch *Batch
	if nilBatch.Defer(flushRecorder{}) || nilBatch.Len() != 0 {
		t.Fatal("a nil Batch took a flusher")
	}
	nilBatch.Flush()

	var log []int
	var b Batch
	for i := range MaxBatched {
		if !b.Defer(flushRecorder{i, &log}) {
			t.Fatalf("flusher %d refused below MaxBatched", i)
		}
	}
	if b.Defer(flushRecorder{-1, &log}) {
		t.Fatalf("a full Batch took flusher %d", MaxBatched+1)
	}
	if len(log) != 0 {
		t.Fatalf("flushed %v before Flush", log)
	}
	b.Flush()
	want := make([]int, MaxBatched)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(log, want) {
		t.Fatalf("flushed %v, want %v in order", log, want)
	}
	if b.Len() != 0 {
		t.Fatalf("Len %d after Flush", b.Len())
	}
	log = nil
	b.Flush()
	if len(log) != 0 || !b.Defer(flushRecorder{7, &log}) {
		t.Fatal("an emptied Batch flushed again or refused a flusher")
	}
	b.Flush()
	if !slices.Equal(log, []int{7}) {
		t.Fatalf("flushed %v after reuse, want [7]", log)
	}
}

// TestPublishBatchHandsTheBatchOn checks that PublishBatch gives every
// subscriber the publisher's batch and Publish gives none.
func TestPublishBatchHandsTheBatchOn(t *testing.T) {
	b := New()
	var got []*Batch
	sub := subscriberFunc3(func(_ *Subscription, _ *Message, batch *Batch) bool {
		got = append(got, batch)
		return true
	})
	for _, id := range []string{"a", "b", "c"} {
		b.Subscribe(NewSubscription(id, "/topic/x", AckAuto, stompframe.V12, sub))
	}
	var batch Batch
	m := NewMessageParts("1", "/topic/x", nil, []byte("b"))
	if n := b.PublishBatch(m, &batch); n != 3 {
		t.Fatalf("PublishBatch delivered %d, want 3", n)
	}
	b.Publish(m)
	for i, g := range got {
		want := &batch
		if i >= 3 {
			want = nil
		}
		if g != want {
			t.Errorf("delivery %d got batch %p, want %p", i, g, want)
		}
	}
}

type subscriberFunc3 func(*Subscription, *Message, *Batch) bool

func (f subscriberFunc3) Deliver(s *Subscription, m *Message, b *Batch) bool { return f(s, m, b) }
