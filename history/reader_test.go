package history

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedStore is a Store whose Tail waits for a gate, so that a test
// decides when reads finish, and counts them.
type gatedStore struct {
	Store
	gate  chan struct{}
	tails atomic.Int64
	err   error
}

func (g *gatedStore) Tail(ctx context.Context, dest string, limit int, r Retention) (Snapshot, error) {
	g.tails.Add(1)
	<-g.gate
	if g.err != nil {
		return Snapshot{}, g.err
	}
	return g.Store.Tail(ctx, dest, limit, r)
}

// A thousand recoveries of one destination that all subscribed before
// the first read share it: one read. Those that subscribed after it
// started share the next: two in all.
func TestReaderHerd(t *testing.T) {
	mem, _ := newTestMemoryStore(t, MemoryConfig{})
	for range 150 {
		mustAppend(t, mem, "/topic/room", Retention{}, "m")
	}
	snap := mustTail(t, mem, "/topic/room", 1, Retention{})
	gs := &gatedStore{Store: mem, gate: make(chan struct{})}
	rd, err := NewReader(ReaderConfig{Store: gs, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	start := Start{Kind: StartAt, Offset: 51, Epoch: snap.Epoch}

	wave := func(n int) {
		subscribed := time.Now()
		var wg sync.WaitGroup
		var bad atomic.Int64
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := rd.Since(context.Background(), "/topic/room", Retention{}, start, subscribed)
				if err != nil || !res.Recovered || len(res.Entries) != 100 {
					bad.Add(1)
				}
			}()
		}
		// Let every caller join before the read may finish.
		waitFor(t, func() bool { return gs.tails.Load() >= 1 && sharedSince(rd) >= uint64(n-1) })
		gs.gate <- struct{}{}
		wg.Wait()
		if bad.Load() != 0 {
			t.Fatalf("%d recoveries did not get the 100 messages", bad.Load())
		}
	}
	wave(1000)
	if st := rd.Stats(); st.Reads != 1 || st.Shared != 999 {
		t.Fatalf("after one wave of 1000: %+v, want 1 read, 999 shared", st)
	}
	resetShared(rd)
	wave(1000)
	if st := rd.Stats(); st.Reads != 2 {
		t.Fatalf("after a second wave: %+v, want 2 reads", st)
	}
}

// sharedBase is the Shared count a wave starts from.
var sharedBase atomic.Uint64

// sharedSince and resetShared let a wave wait for its own joiners.
func sharedSince(rd *Reader) uint64 { return rd.Stats().Shared - sharedBase.Load() }
func resetShared(rd *Reader)        { sharedBase.Store(rd.Stats().Shared) }

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A read that fails answers every recovery that shared it with
// ReasonUnavailable and the error.
func TestReaderUnavailable(t *testing.T) {
	mem, _ := newTestMemoryStore(t, MemoryConfig{})
	boom := errors.New("down")
	gs := &gatedStore{Store: mem, gate: make(chan struct{}), err: boom}
	close(gs.gate)
	rd, err := NewReader(ReaderConfig{Store: gs})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	res, err := rd.Since(context.Background(), "/topic/a", Retention{}, Start{Kind: StartFirst}, time.Now())
	if !errors.Is(err, boom) || res.Recovered || res.Reason != ReasonUnavailable {
		t.Fatalf("Since on a failing store = %+v, %v; want unavailable, the error", res, err)
	}
	if st := rd.Stats(); st.Failed != 1 {
		t.Fatalf("Stats = %+v, want 1 failed", st)
	}
}

// A caller whose context ends first is answered unavailable at once;
// the read goes on for the others.
func TestReaderContext(t *testing.T) {
	mem, _ := newTestMemoryStore(t, MemoryConfig{})
	gs := &gatedStore{Store: mem, gate: make(chan struct{})}
	rd, err := NewReader(ReaderConfig{Store: gs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := rd.Since(ctx, "/topic/a", Retention{}, Start{Kind: StartFirst}, time.Now())
	if !errors.Is(err, context.Canceled) || res.Reason != ReasonUnavailable {
		t.Fatalf("Since with a cancelled context = %+v, %v", res, err)
	}
	close(gs.gate)
	rd.Close()
	rd.Close() // idempotent
	if _, err := rd.Since(context.Background(), "/topic/a", Retention{}, Start{}, time.Now()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Since after Close error %v, want ErrClosed", err)
	}
}

// Past MaxFlights destinations, a read goes alone and is counted.
func TestReaderMaxFlights(t *testing.T) {
	mem, _ := newTestMemoryStore(t, MemoryConfig{})
	gs := &gatedStore{Store: mem, gate: make(chan struct{})}
	rd, err := NewReader(ReaderConfig{Store: gs, MaxFlights: 2, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, d := range []string{"/topic/a", "/topic/b", "/topic/c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := rd.Since(context.Background(), d, Retention{}, Start{}, time.Now()); err != nil {
				t.Error(err)
			}
		}()
	}
	waitFor(t, func() bool { return gs.tails.Load() == 3 })
	close(gs.gate)
	wg.Wait()
	rd.Close()
	if st := rd.Stats(); st.Reads != 3 || st.Uncoalesced != 1 {
		t.Fatalf("Stats = %+v, want 3 reads, 1 uncoalesced", st)
	}
}

func TestNewReaderRefuses(t *testing.T) {
	t.Parallel()
	mem, _ := newTestMemoryStore(t, MemoryConfig{})
	for _, cfg := range []ReaderConfig{
		{},
		{Store: mem, Interval: -1},
		{Store: mem, MaxRecovery: -1},
		{Store: mem, MaxRecovery: MaxKeep + 1},
		{Store: mem, MaxFlights: -1},
	} {
		if _, err := NewReader(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewReader(%+v) error %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
