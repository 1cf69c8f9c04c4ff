package presence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// frames collects what a watch is sent.
type frames struct {
	mu  sync.Mutex
	got []frame
}

// frame is a presence frame as a client reads it.
type frame struct {
	Type    string   `json:"type"`
	Seq     uint64   `json:"seq"`
	Count   int      `json:"count"`
	Members []Member `json:"members"`
	Events  []Event  `json:"events"`
}

func (f *frames) send(body []byte) bool {
	var fr frame
	if err := json.Unmarshal(body, &fr); err != nil {
		panic(err)
	}
	f.mu.Lock()
	f.got = append(f.got, fr)
	f.mu.Unlock()
	return true
}

func (f *frames) all() []frame {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// events lists the frames' events as "seq op principal".
func (f *frames) events() []string {
	var out []string
	for _, fr := range f.all() {
		for _, e := range fr.Events {
			out = append(out, fmt.Sprintf("%d %s %s", e.Seq, e.Op, e.Principal))
		}
	}
	return out
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func rooms(dest string) bool { return strings.HasPrefix(dest, "/topic/room.") }

func newTracker(t *testing.T, cfg Config) *Tracker {
	t.Helper()
	if cfg.Enabled == nil {
		cfg.Enabled = rooms
	}
	tr := New(cfg)
	t.Cleanup(tr.Close)
	return tr
}

// TestTabsAndLeaves: a principal's second session is no join, its first
// ending no leave, its last ending one leave.
func TestTabsAndLeaves(t *testing.T) {
	tr := newTracker(t, Config{})
	var f frames
	stop, err := tr.Watch("/topic/room.1", f.send)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tab1, _ := tr.Join("/topic/room.1", "alice", "a")
	tab2, _ := tr.Join("/topic/room.1", "alice", "a")
	bob, _ := tr.Join("/topic/room.1", "bob", "")
	waitFor(t, "two joins", func() bool { return len(f.events()) == 2 })
	tab1()
	tab1() // twice is once
	waitFor(t, "alice at one session", func() bool {
		s, _ := tr.Members(context.Background(), "/topic/room.1")
		return len(s.Members) == 2 && s.Members[0].Sessions == 1
	})
	tab2()
	waitFor(t, "alice's leave", func() bool { return len(f.events()) == 3 })
	bob()
	want := []string{"1 join alice", "2 join bob", "3 leave alice", "4 leave bob"}
	waitFor(t, "four events", func() bool { return len(f.events()) >= 4 })
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if first := f.all()[0]; first.Type != "snapshot" || first.Seq != 0 || first.Count != 0 {
		t.Errorf("first frame = %+v, want an empty snapshot at seq 0", first)
	}
}

// TestGrace: a member back within the grace period is neither a leave nor
// a join; one away longer leaves.
func TestGrace(t *testing.T) {
	tr := newTracker(t, Config{Grace: time.Hour})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	defer stop()
	leave, _ := tr.Join("/topic/room.1", "alice", "")
	waitFor(t, "alice's join", func() bool { return len(f.events()) == 1 })
	leave()
	back, _ := tr.Join("/topic/room.1", "alice", "")
	defer back()
	bob, _ := tr.Join("/topic/room.1", "bob", "")
	defer bob()
	waitFor(t, "bob's join", func() bool { return len(f.events()) == 2 })
	if got, want := f.events(), []string{"1 join alice", "2 join bob"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}

	short := newTracker(t, Config{Grace: time.Millisecond})
	var g frames
	stop2, _ := short.Watch("/topic/room.2", g.send)
	defer stop2()
	leave, _ = short.Join("/topic/room.2", "carol", "")
	leave()
	waitFor(t, "carol's leave", func() bool { return len(g.events()) == 2 })
}

// TestBatch: the changes within the batch window reach a watcher in one
// frame, with seqs that continue its snapshot's.
func TestBatch(t *testing.T) {
	tr := newTracker(t, Config{Batch: time.Hour})
	pre, _ := tr.Join("/topic/room.1", "zed", "")
	defer pre()
	waitFor(t, "zed stored", func() bool {
		s, _ := tr.Members(context.Background(), "/topic/room.1")
		return s.Count == 1
	})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	defer stop()
	for i := range 50 {
		leave, _ := tr.Join("/topic/room.1", fmt.Sprintf("p%02d", i), "")
		defer leave()
	}
	d := tr.dests["/topic/room.1"]
	waitFor(t, "50 pending events", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.pending) == 50
	})
	tr.flush(d)
	got := f.all()
	if len(got) != 2 || got[0].Seq != 1 || got[1].Type != "delta" || len(got[1].Events) != 50 || got[1].Events[0].Seq != 2 || got[1].Seq != 51 {
		t.Errorf("frames = %+v, want a snapshot at 1 and one delta of seqs 2..51", got)
	}
}

// TestMaxMembers: a snapshot lists MaxMembers of its count, and a delta
// frame carries at most MaxMembers events.
func TestMaxMembers(t *testing.T) {
	tr := newTracker(t, Config{MaxMembers: 2, Batch: time.Hour})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	defer stop()
	for _, p := range []string{"c", "a", "b"} {
		leave, _ := tr.Join("/topic/room.1", p, "")
		defer leave()
	}
	d := tr.dests["/topic/room.1"]
	waitFor(t, "3 pending events", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.pending) == 3
	})
	tr.flush(d)
	if got := f.all(); len(got) != 3 || len(got[1].Events) != 2 || len(got[2].Events) != 1 || got[1].Seq != 2 || got[2].Seq != 3 {
		t.Errorf("frames = %+v, want deltas of 2 and 1 events", got)
	}
	var g frames
	stop2, _ := tr.Watch("/topic/room.1", g.send)
	defer stop2()
	if s := g.all()[0]; s.Count != 3 || len(s.Members) != 2 || s.Members[0].Principal != "a" || s.Members[1].Principal != "b" {
		t.Errorf("snapshot = %+v, want a and b of 3", s)
	}
}

// TestGapResnapshots: an event that skips a seq (a message the store
// lost) makes every watcher get a fresh snapshot instead of a delta.
func TestGapResnapshots(t *testing.T) {
	store := NewMemoryStore()
	tr := newTracker(t, Config{Store: store})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	defer stop()
	_ = store.Set(context.Background(), "/topic/room.1", "a", 1, "")
	_ = store.Set(context.Background(), "/topic/room.1", "b", 1, "")
	tr.deliver("/topic/room.1", []Event{{Seq: 5, Op: OpJoin, Principal: "ghost"}})
	got := f.all()
	if last := got[len(got)-1]; last.Type != "snapshot" || last.Count != 2 {
		t.Errorf("after a gap: %+v, want a snapshot of 2", last)
	}
}

// TestRefusals: Watch refuses a destination that keeps no presence and
// any after Close; Join ignores one.
func TestRefusals(t *testing.T) {
	tr := New(Config{Enabled: rooms})
	if _, err := tr.Watch("/topic/chat", func([]byte) bool { return true }); !errors.Is(err, ErrNotEnabled) {
		t.Errorf("Watch(/topic/chat) = %v, want ErrNotEnabled", err)
	}
	if leave, ok := tr.Join("/topic/chat", "a", ""); ok || leave != nil {
		t.Errorf("Join(/topic/chat) ok = %v, want false", ok)
	}
	tr.Close()
	tr.Close()
	if _, err := tr.Watch("/topic/room.1", func([]byte) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch after Close = %v, want ErrClosed", err)
	}
}

// TestCoalesce: a member that joins and leaves before the writer's turn
// costs no store write and no event.
func TestCoalesce(t *testing.T) {
	store := &countingStore{MemoryStore: NewMemoryStore()}
	tr := newTracker(t, Config{Store: store})
	tr.mu.Lock() // hold the writer back
	k := memberKey{"/topic/room.1", "a"}
	tr.local[k] = &localMember{sessions: 1, held: true}
	tr.markLocked(k)
	tr.local[k].sessions, tr.local[k].held = 0, false
	tr.mu.Unlock()
	leave, _ := tr.Join("/topic/room.1", "b", "")
	defer leave()
	waitFor(t, "b written", func() bool { return store.sets.Load() >= 1 })
	if n := store.sets.Load(); n != 1 {
		t.Errorf("%d store writes, want 1 (b's)", n)
	}
}

type countingStore struct {
	*MemoryStore
	sets atomic.Int64
}

func (c *countingStore) Set(ctx context.Context, dest, principal string, sessions int, info string) error {
	c.sets.Add(1)
	return c.MemoryStore.Set(ctx, dest, principal, sessions, info)
}

// TestMemoryForgetsEmptyRooms: a room with neither members nor watchers
// leaves nothing in the memory store; a watched empty room keeps its seq.
func TestMemoryForgetsEmptyRooms(t *testing.T) {
	store := NewMemoryStore()
	tr := newTracker(t, Config{Store: store})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	for i := range 10 {
		leave, _ := tr.Join(fmt.Sprintf("/topic/room.%d", i), "a", "")
		if i == 1 {
			waitFor(t, "room.1's join", func() bool { return len(f.events()) == 1 })
		}
		leave()
	}
	waitFor(t, "room.1's leave", func() bool { return len(f.events()) == 2 })
	waitFor(t, "the writer done", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.local) == 0
	})
	store.mu.Lock()
	n, seq := len(store.dests), store.dests["/topic/room.1"].seq
	store.mu.Unlock()
	if n != 1 || seq != 2 {
		t.Errorf("store holds %d rooms, room.1 at seq %d; want the watched room alone, at 2", n, seq)
	}
	stop()
	store.mu.Lock()
	n = len(store.dests)
	store.mu.Unlock()
	if n != 0 {
		t.Errorf("store holds %d rooms after the last watch, want 0", n)
	}
}

// TestSyncResnapshots: a store's OpSync beyond what the tracker heard
// sends a fresh snapshot; one it has heard changes nothing.
func TestSyncResnapshots(t *testing.T) {
	store := NewMemoryStore()
	tr := newTracker(t, Config{Store: store})
	var f frames
	stop, _ := tr.Watch("/topic/room.1", f.send)
	defer stop()
	tr.deliver("/topic/room.1", []Event{{Seq: 0, Op: OpSync}})
	if n := len(f.all()); n != 1 {
		t.Errorf("%d frames after a sync at the watcher's seq, want the first snapshot alone", n)
	}
	tr.deliver("/topic/room.1", []Event{{Seq: 7, Op: OpSync}})
	if got := f.all(); len(got) != 2 || got[1].Type != "snapshot" {
		t.Errorf("frames after a sync ahead: %+v, want a second snapshot", got)
	}
}

// failingStore fails its first Set calls.
type failingStore struct {
	*MemoryStore
	fails atomic.Int64
}

func (f *failingStore) Set(ctx context.Context, dest, principal string, sessions int, info string) error {
	if f.fails.Add(-1) >= 0 {
		return errors.New("store down")
	}
	return f.MemoryStore.Set(ctx, dest, principal, sessions, info)
}

// TestWriteRetried: a write the store refused is made again after a
// pause, and the member arrives.
func TestWriteRetried(t *testing.T) {
	store := &failingStore{MemoryStore: NewMemoryStore()}
	store.fails.Store(1)
	tr := newTracker(t, Config{Store: store})
	leave, _ := tr.Join("/topic/room.1", "a", "")
	defer leave()
	waitFor(t, "a written", func() bool {
		s, _ := tr.Members(context.Background(), "/topic/room.1")
		return s.Count == 1
	})
	if n := store.fails.Load(); n != -1 {
		t.Errorf("store called %d times, want 2 (one refused)", 1-n)
	}
}

// TestInFlightEvents: an event still on its way when a second watcher
// reads its snapshot (which holds it) reaches the first watcher, not
// the second, and neither sees a gap.
func TestInFlightEvents(t *testing.T) {
	store := NewMemoryStore()
	tr := newTracker(t, Config{Store: store})
	var held [][]Event
	store.Attach(func(_ string, evs []Event) { held = append(held, evs) }) // the channel, slowed
	var a, b frames
	stopA, _ := tr.Watch("/topic/room.1", a.send)
	defer stopA()
	_ = store.Set(context.Background(), "/topic/room.1", "x", 1, "")
	stopB, _ := tr.Watch("/topic/room.1", b.send)
	defer stopB()
	for _, evs := range held {
		tr.deliver("/topic/room.1", evs)
	}
	if got := a.events(); !slices.Equal(got, []string{"1 join x"}) {
		t.Errorf("first watcher's events = %q, want x's join", got)
	}
	if got := b.all(); len(got) != 1 || got[0].Seq != 1 || got[0].Count != 1 {
		t.Errorf("second watcher's frames = %+v, want its snapshot at seq 1 alone", got)
	}
	_ = store.Set(context.Background(), "/topic/room.1", "y", 1, "")
	tr.deliver("/topic/room.1", held[len(held)-1])
	if a.events()[1] != "2 join y" || b.events()[0] != "2 join y" {
		t.Errorf("next event: %q and %q, want y's join for both", a.events(), b.events())
	}
}
