package history

import (
	"context"
	"sync"
	"testing"
	"time"
)

// hub stands in for the broker: it hands each delivered message to every
// registered subscription, in the order it is called.
type hub struct {
	mu   sync.Mutex
	subs []chan Message
}

func (h *hub) register(n int) chan Message {
	c := make(chan Message, n)
	h.mu.Lock()
	h.subs = append(h.subs, c)
	h.mu.Unlock()
	return c
}

func (h *hub) deliver(m Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.subs {
		c <- m
	}
}

// splice runs one subscription the way the server is meant to: register
// for live messages, note when, read the history through rd, and hand
// both to a Recovery until want offsets were emitted. It returns the
// offsets emitted, in order, and the settling step.
func splice(t *testing.T, rd *Reader, live <-chan Message, dest string, start Start, want int) ([]uint64, Step) {
	t.Helper()
	subscribed := time.Now()
	rc := NewRecovery(10*want, 0)
	var got []uint64
	var decided Step
	take := func(st Step) {
		if st.Decided {
			decided = st
			if !st.Recovered {
				t.Fatalf("not recovered: %q", st.Reason)
			}
		}
		if st.Gap {
			t.Errorf("gap in live delivery: %q", st.Reason)
		}
		for _, m := range st.Emit {
			got = append(got, m.Offset)
		}
	}
	done := make(chan Result, 1)
	go func() {
		res, err := rd.Since(context.Background(), dest, spliceRetention, start, subscribed)
		if err != nil {
			t.Errorf("Since: %v", err)
		}
		done <- res
	}()
	timeout := time.After(30 * time.Second)
	for len(got) < want || !rc.Settled() {
		select {
		case m := <-live:
			take(rc.Live(m))
		case res := <-done:
			take(rc.Apply(res))
		case <-timeout:
			t.Fatalf("after 30s: %d of %d messages, settled %v", len(got), want, rc.Settled())
		}
	}
	return got, decided
}

// spliceRetention keeps everything the splice tests publish.
var spliceRetention = Retention{Keep: 10_000}

// checkRun fails unless got is exactly from, from+1, ..., from+n-1.
func checkRun(t *testing.T, got []uint64, from uint64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d messages, want %d", len(got), n)
	}
	for i, o := range got {
		if o != from+uint64(i) {
			t.Fatalf("message %d has offset %d, want %d (a gap or a duplicate)", i, o, from+uint64(i))
		}
	}
}

// Publishers keep publishing while a subscription recovers: the replay
// and the live messages join with no gap and no duplicate.
func TestSpliceMemoryConcurrentPublishers(t *testing.T) {
	s, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(ReaderConfig{Store: s, Interval: time.Millisecond, MaxRecovery: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	h := &hub{}
	const dest, before, publishers, each = "/topic/chat", 300, 4, 250
	var pos Position
	publish := func() {
		var err error
		pos, err = s.AppendDeliver(dest, []byte("m"), spliceRetention, func(p Position) {
			h.deliver(Message{Offset: p.Offset, Epoch: p.Epoch})
		})
		if err != nil {
			t.Error(err)
		}
	}
	for range before {
		publish()
	}
	epoch := pos.Epoch
	live := h.register(before + publishers*each)
	var wg sync.WaitGroup
	for range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := s.AppendDeliver(dest, []byte("m"), spliceRetention, func(p Position) {
					h.deliver(Message{Offset: p.Offset, Epoch: p.Epoch})
				}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	// The client had received up to offset 100 of the epoch.
	got, st := splice(t, rd, live, dest, Start{Kind: StartAt, Offset: 101, Epoch: epoch}, before+publishers*each-100)
	wg.Wait()
	if !st.Recovered {
		t.Fatalf("not recovered: %q", st.Reason)
	}
	checkRun(t, got, 101, before+publishers*each-100)
}
