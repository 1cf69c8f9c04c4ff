package history

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/randid"
)

// Defaults of MemoryConfig.
const (
	// DefaultMaxDestinations bounds how many destinations a MemoryStore
	// keeps a history for: a few thousand rooms live at once on one
	// instance, with room to spare. Past it the destination appended to
	// least recently loses its history (and so its epoch).
	DefaultMaxDestinations = 10_000
	// DefaultMaxBytes bounds the bytes of message data a MemoryStore
	// holds, across destinations: 64 MiB, a small share of an instance
	// that serves thousands of sessions. Past it, whole histories are
	// evicted, least recently appended first, as for MaxDestinations.
	DefaultMaxBytes = 64 << 20
	// entryOverhead is what one entry costs beside its data, counted
	// toward MaxBytes so that empty messages are not free.
	entryOverhead = 48
)

// MemoryConfig configures a MemoryStore. The zero value works.
type MemoryConfig struct {
	// MaxDestinations bounds the destinations with a history. Zero means
	// DefaultMaxDestinations; negative is an error.
	MaxDestinations int
	// MaxBytes bounds the bytes held, data plus 48 per entry. Zero means
	// DefaultMaxBytes; negative is an error.
	MaxBytes int64
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// MemoryStore keeps each destination's history in process memory: a ring
// of its newest messages, bounded by the Retention of each Append (count
// and age) and, across destinations, by MaxDestinations and MaxBytes,
// which evict whole histories, least recently appended first. An evicted
// history that is appended to again starts a new epoch, so that nobody
// reads across the hole.
//
// It serves a single instance (no Redis): Append orders and delivers
// within the process. A MemoryStore is safe for concurrent use; Appends
// to one destination are serialised, to different ones run in parallel.
type MemoryStore struct {
	maxDests int
	maxBytes int64
	now      func() time.Time

	// bytes is what every history holds, updated after each change.
	bytes   atomic.Int64
	evicted atomic.Uint64

	// mu guards dests and lru. Lock order: mu before a memHistory's mu.
	mu    sync.Mutex
	dests map[string]*list.Element // of *memHistory
	lru   *list.List               // front: appended to most recently
}

// memHistory is one destination's ring.
type memHistory struct {
	dest  string
	epoch string // fixed at creation

	// mu guards the fields below and serialises Appends.
	mu      sync.Mutex
	ring    []memEntry // capacity grows to the Keep in force
	head    int        // index of the oldest entry
	n       int        // entries held
	last    uint64     // latest offset assigned
	bytes   int64      // what the entries hold, with overhead
	evicted bool       // removed from the store: appends go nowhere
}

type memEntry struct {
	Entry
	at time.Time
}

// NewMemoryStore returns an empty MemoryStore configured by cfg.
func NewMemoryStore(cfg MemoryConfig) (*MemoryStore, error) {
	if cfg.MaxDestinations < 0 {
		return nil, configErrorf("MemoryConfig.MaxDestinations %d is negative", cfg.MaxDestinations)
	}
	if cfg.MaxBytes < 0 {
		return nil, configErrorf("MemoryConfig.MaxBytes %d is negative", cfg.MaxBytes)
	}
	if cfg.MaxDestinations == 0 {
		cfg.MaxDestinations = DefaultMaxDestinations
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &MemoryStore{
		maxDests: cfg.MaxDestinations,
		maxBytes: cfg.MaxBytes,
		now:      cfg.Now,
		dests:    make(map[string]*list.Element),
		lru:      list.New(),
	}, nil
}

var _ Store = (*MemoryStore)(nil)

// Append is AppendDeliver without a deliver function.
func (s *MemoryStore) Append(ctx context.Context, dest string, data []byte, r Retention) (Position, error) {
	return s.AppendDeliver(dest, data, r, nil)
}

// AppendDeliver adds data as dest's next message and, if deliver is not
// nil, calls it with the message's position before any later Append of
// dest can return: deliveries happen in offset order, so that history
// order is delivery order. deliver must not block (the broker's fan-out
// into bounded session queues does not) and must not call the store.
func (s *MemoryStore) AppendDeliver(dest string, data []byte, r Retention, deliver func(Position)) (Position, error) {
	if dest == "" {
		return Position{}, ErrEmptyDestination
	}
	if err := r.Validate(); err != nil {
		return Position{}, err
	}
	r = r.WithDefaults()
	h := s.history(dest)
	now := s.now()
	h.mu.Lock()
	before := h.bytes
	h.trimLocked(now, r)
	h.last++
	h.pushLocked(memEntry{Entry: Entry{Offset: h.last, Data: data}, at: now}, r.Keep)
	pos := Position{Offset: h.last, Epoch: h.epoch}
	if deliver != nil {
		deliver(pos)
	}
	delta, gone := h.bytes-before, h.evicted
	h.mu.Unlock()
	if !gone {
		if s.bytes.Add(delta) > s.maxBytes {
			s.evict()
		}
	}
	return pos, nil
}

// history returns dest's history, created (with a new epoch) if there
// is none, and marks it appended to most recently.
func (s *MemoryStore) history(dest string) *memHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.dests[dest]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*memHistory)
	}
	h := &memHistory{dest: dest, epoch: randid.New(10)}
	s.dests[dest] = s.lru.PushFront(h)
	for len(s.dests) > s.maxDests {
		s.removeLocked(s.lru.Back())
	}
	return h
}

// evict removes the least recently appended histories until the bytes
// held are within MaxBytes, keeping at least the most recent one.
func (s *MemoryStore) evict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.bytes.Load() > s.maxBytes && s.lru.Len() > 1 {
		s.removeLocked(s.lru.Back())
	}
}

// removeLocked drops the history of e; s.mu is held.
func (s *MemoryStore) removeLocked(e *list.Element) {
	h := e.Value.(*memHistory)
	s.lru.Remove(e)
	delete(s.dests, h.dest)
	h.mu.Lock()
	h.evicted = true
	s.bytes.Add(-h.bytes)
	h.mu.Unlock()
	s.evicted.Add(1)
}

// Tail returns dest's snapshot with at most limit newest entries; those
// older than r.For are not retained. A destination with no history
// returns a Snapshot with no epoch, First 1 and Last 0.
func (s *MemoryStore) Tail(ctx context.Context, dest string, limit int, r Retention) (Snapshot, error) {
	if err := r.Validate(); err != nil {
		return Snapshot{}, err
	}
	r = r.WithDefaults()
	s.mu.Lock()
	e, ok := s.dests[dest]
	s.mu.Unlock()
	if !ok {
		return Snapshot{First: 1}, nil
	}
	h := e.Value.(*memHistory)
	cutoff := s.now().Add(-r.For)
	h.mu.Lock()
	defer h.mu.Unlock()
	snap := Snapshot{Epoch: h.epoch, Last: h.last, First: h.last + 1}
	// The oldest entry still young enough.
	skip := 0
	for skip < h.n && h.at(skip).at.Before(cutoff) {
		skip++
	}
	if skip < h.n {
		snap.First = h.at(skip).Offset
	}
	n := h.n - skip
	if limit < n {
		n = max(limit, 0)
	}
	snap.Entries = make([]Entry, n)
	for i := range n {
		snap.Entries[i] = h.at(h.n - n + i).Entry
	}
	return snap, nil
}

// at returns the i-th oldest entry held; h.mu is held.
func (h *memHistory) at(i int) *memEntry {
	return &h.ring[(h.head+i)%len(h.ring)]
}

// trimLocked drops entries older than r.For, and beyond r.Keep - 1 so
// that one more fits.
func (h *memHistory) trimLocked(now time.Time, r Retention) {
	cutoff := now.Add(-r.For)
	for h.n > 0 && (h.n >= r.Keep || h.at(0).at.Before(cutoff)) {
		h.popLocked()
	}
}

func (h *memHistory) popLocked() {
	e := h.at(0)
	h.bytes -= int64(len(e.Data)) + entryOverhead
	*e = memEntry{}
	h.head = (h.head + 1) % len(h.ring)
	h.n--
}

// pushLocked appends e, growing the ring up to keep entries.
func (h *memHistory) pushLocked(e memEntry, keep int) {
	if h.n == len(h.ring) {
		size := min(max(2*len(h.ring), 8), keep)
		ring := make([]memEntry, size)
		for i := range h.n {
			ring[i] = *h.at(i)
		}
		h.ring, h.head = ring, 0
	}
	h.ring[(h.head+h.n)%len(h.ring)] = e
	h.n++
	h.bytes += int64(len(e.Data)) + entryOverhead
}

// MemoryStats counts what a MemoryStore holds and has evicted.
type MemoryStats struct {
	// Destinations is how many destinations have a history now.
	Destinations int
	// Bytes is what they hold, data plus per-entry overhead.
	Bytes int64
	// Evicted counts histories removed for MaxDestinations or MaxBytes.
	Evicted uint64
}

// Stats returns the store's counters.
func (s *MemoryStore) Stats() MemoryStats {
	s.mu.Lock()
	n := len(s.dests)
	s.mu.Unlock()
	return MemoryStats{Destinations: n, Bytes: s.bytes.Load(), Evicted: s.evicted.Load()}
}
