package streams

import (
	"context"
	"errors"
	"testing"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/testredis"
)

// A Redis that lost its script cache still takes the Publisher's
// batches (EVALSHA refused, sent again with the script), and nothing is
// appended twice.
func TestPublisherScriptFlushed(t *testing.T) {
	rs := testredis.Start(t)
	s := newTestStore(t, rs.URL(), Config{})
	c := newTestClient(t, rs.URL())
	mustAppend(t, s, "/topic/a", history.Retention{}, "loads the script")
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p, err := s.NewPublisher(PublisherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p.Publish("/topic/a", []byte("m"), history.Retention{})
	}
	p.Close()
	if st := p.Stats(); st.Published != 10 || st.Failed != 0 {
		t.Fatalf("Stats = %+v, want 10 published", st)
	}
	if snap := mustTail(t, s, "/topic/a", 100, history.Retention{}); snap.Last != 11 || len(snap.Entries) != 11 {
		t.Fatalf("history last %d with %d entries, want 11 and 11", snap.Last, len(snap.Entries))
	}
}

// A full queue, in messages or in bytes, refuses and counts; so does a
// closed Publisher. Redis down: the batch fails and is counted.
func TestPublisherBounds(t *testing.T) {
	rs := testredis.Start(t)
	s := newTestStore(t, rs.URL(), Config{})
	rs.Kill() // nothing is sent: the queue fills
	p, err := s.NewPublisher(PublisherConfig{QueueSize: 4, QueueBytes: 10, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for range 20 {
		if p.Publish("/topic/a", []byte("12345"), history.Retention{}) {
			accepted++
		}
	}
	if p.Publish("/topic/a", make([]byte, 11), history.Retention{}) {
		t.Error("a payload larger than QueueBytes was queued")
	}
	p.Close()
	if p.Publish("/topic/a", nil, history.Retention{}) {
		t.Error("Publish after Close returned true")
	}
	st := p.Stats()
	if st.Published != 0 || st.Failed+st.Dropped != 22 || st.Failed != uint64(accepted) {
		t.Fatalf("Stats = %+v with %d accepted; want every message failed or dropped", st, accepted)
	}
	if _, err := s.NewPublisher(PublisherConfig{QueueSize: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewPublisher(QueueSize -1) error %v", err)
	}
}
