package history

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// clock is a settable clock for the memory store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestMemoryStore(t *testing.T, cfg MemoryConfig) (*MemoryStore, *clock) {
	t.Helper()
	c := &clock{t: t0}
	cfg.Now = c.now
	s, err := NewMemoryStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func mustAppend(t testing.TB, s Store, dest string, r Retention, data string) Position {
	t.Helper()
	pos, err := s.Append(context.Background(), dest, []byte(data), r)
	if err != nil {
		t.Fatalf("Append(%s, %q): %v", dest, data, err)
	}
	return pos
}

func mustTail(t testing.TB, s Store, dest string, limit int, r Retention) Snapshot {
	t.Helper()
	snap, err := s.Tail(context.Background(), dest, limit, r)
	if err != nil {
		t.Fatalf("Tail(%s): %v", dest, err)
	}
	return snap
}

// The ring keeps the newest Keep messages, with offsets counted on.
func TestMemoryKeep(t *testing.T) {
	t.Parallel()
	s, _ := newTestMemoryStore(t, MemoryConfig{})
	r := Retention{Keep: 3}
	var epoch string
	for i := 1; i <= 10; i++ {
		pos := mustAppend(t, s, "/topic/a", r, fmt.Sprint(i))
		if pos.Offset != uint64(i) || (epoch != "" && pos.Epoch != epoch) {
			t.Fatalf("Append %d = %+v", i, pos)
		}
		epoch = pos.Epoch
	}
	snap := mustTail(t, s, "/topic/a", 100, r)
	if snap.First != 8 || snap.Last != 10 || len(snap.Entries) != 3 || string(snap.Entries[0].Data) != "8" {
		t.Fatalf("Tail = first %d last %d %d entries, want 8, 10, 3", snap.First, snap.Last, len(snap.Entries))
	}
	if res := Since(snap, Start{Kind: StartAt, Offset: 7, Epoch: epoch}, 100); res.Reason != ReasonTrimmed {
		t.Fatalf("Since(7) reason %q, want trimmed", res.Reason)
	}
	if res := Since(snap, Start{Kind: StartAt, Offset: 8, Epoch: epoch}, 100); !res.Recovered || len(res.Entries) != 3 {
		t.Fatalf("Since(8) = %+v, want 3 recovered", res)
	}
}

// Messages older than For are not retained, on append and on read.
func TestMemoryAge(t *testing.T) {
	t.Parallel()
	s, c := newTestMemoryStore(t, MemoryConfig{})
	r := Retention{For: time.Minute}
	mustAppend(t, s, "/topic/a", r, "1") // t0
	c.add(30 * time.Second)
	mustAppend(t, s, "/topic/a", r, "2") // t0+30s
	c.add(40 * time.Second)              // t0+70s: 1 is too old, 2 is not
	snap := mustTail(t, s, "/topic/a", 100, r)
	if snap.First != 2 || snap.Last != 2 || len(snap.Entries) != 1 {
		t.Fatalf("Tail at t0+70s = first %d last %d %d entries, want 2, 2, 1", snap.First, snap.Last, len(snap.Entries))
	}
	c.add(time.Minute) // t0+130s: nothing retained, the epoch stays
	snap = mustTail(t, s, "/topic/a", 100, r)
	if snap.First != 3 || snap.Last != 2 || len(snap.Entries) != 0 {
		t.Fatalf("Tail at t0+130s = first %d last %d %d entries, want 3, 2, 0", snap.First, snap.Last, len(snap.Entries))
	}
	if res := Since(snap, Start{Kind: StartAt, Offset: 3, Epoch: snap.Epoch}, 100); !res.Recovered {
		t.Fatalf("a client that had everything is recovered after the history aged out: %+v", res)
	}
	if pos := mustAppend(t, s, "/topic/a", r, "3"); pos.Offset != 3 || pos.Epoch != snap.Epoch {
		t.Fatalf("Append after ageing = %+v, want offset 3 in epoch %s", pos, snap.Epoch)
	}
}

// Past MaxDestinations the least recently appended history goes, and
// coming back it has a new epoch.
func TestMemoryMaxDestinations(t *testing.T) {
	t.Parallel()
	s, _ := newTestMemoryStore(t, MemoryConfig{MaxDestinations: 2})
	a := mustAppend(t, s, "/topic/a", Retention{}, "a1")
	mustAppend(t, s, "/topic/b", Retention{}, "b1")
	mustAppend(t, s, "/topic/a", Retention{}, "a2") // a is now the most recent
	mustAppend(t, s, "/topic/c", Retention{}, "c1") // evicts b
	if st := s.Stats(); st.Destinations != 2 || st.Evicted != 1 {
		t.Fatalf("Stats = %+v, want 2 destinations, 1 evicted", st)
	}
	if snap := mustTail(t, s, "/topic/b", 10, Retention{}); snap.Epoch != "" {
		t.Fatalf("evicted /topic/b still has epoch %q", snap.Epoch)
	}
	if snap := mustTail(t, s, "/topic/a", 10, Retention{}); snap.Epoch != a.Epoch || snap.Last != 2 {
		t.Fatalf("/topic/a = %+v, want kept", snap)
	}
	b := mustAppend(t, s, "/topic/b", Retention{}, "b2")
	if b.Offset != 1 {
		t.Fatalf("re-created /topic/b starts at %d, want 1", b.Offset)
	}
	snap := mustTail(t, s, "/topic/b", 10, Retention{})
	if res := Since(snap, Start{Kind: StartAt, Offset: 2, Epoch: "old"}, 10); res.Reason != ReasonEpochChanged {
		t.Fatalf("old position on a re-created history: reason %q, want epoch_changed", res.Reason)
	}
}

// Past MaxBytes whole histories are evicted, least recently appended
// first, and the bytes held stay within the bound.
func TestMemoryMaxBytes(t *testing.T) {
	t.Parallel()
	s, _ := newTestMemoryStore(t, MemoryConfig{MaxBytes: 10 * (100 + entryOverhead)})
	data := string(make([]byte, 100))
	for i := range 4 {
		for range 3 {
			mustAppend(t, s, fmt.Sprintf("/topic/%d", i), Retention{}, data)
		}
	}
	st := s.Stats()
	if st.Bytes > 10*(100+entryOverhead) || st.Evicted != 1 || st.Destinations != 3 {
		t.Fatalf("Stats = %+v, want at most %d bytes, 1 evicted, 3 left", st, 10*(100+entryOverhead))
	}
	if snap := mustTail(t, s, "/topic/0", 10, Retention{}); snap.Epoch != "" {
		t.Fatal("the least recent history was not the one evicted")
	}
}

func TestMemoryRefuses(t *testing.T) {
	t.Parallel()
	s, _ := newTestMemoryStore(t, MemoryConfig{})
	if _, err := s.Append(context.Background(), "", nil, Retention{}); err != ErrEmptyDestination {
		t.Errorf("Append(\"\") error %v, want ErrEmptyDestination", err)
	}
	for _, r := range []Retention{{Keep: -1}, {Keep: MaxKeep + 1}, {For: -time.Second}, {For: MaxFor + 1}} {
		if _, err := s.Append(context.Background(), "/topic/a", nil, r); err == nil {
			t.Errorf("Append with %+v: no error", r)
		}
	}
	if _, err := NewMemoryStore(MemoryConfig{MaxBytes: -1}); err == nil {
		t.Error("NewMemoryStore(MaxBytes -1): no error")
	}
	if _, err := NewMemoryStore(MemoryConfig{MaxDestinations: -1}); err == nil {
		t.Error("NewMemoryStore(MaxDestinations -1): no error")
	}
}
