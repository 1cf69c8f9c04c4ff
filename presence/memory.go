package presence

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemoryStore is a Store for one instance, in process memory: the
// default when no shared store is configured. The zero value is not
// usable; call NewMemoryStore. It is safe for concurrent use.
type MemoryStore struct {
	// mu guards dests and serialises the events, so that deliver sees
	// each destination's in Seq order.
	mu      sync.Mutex
	dests   map[string]*memDest
	deliver func(dest string, events []Event)
}

// memDest is one destination's membership.
type memDest struct {
	seq     uint64
	members map[string]*Member
	watched int // Watched(true) minus Watched(false)
}

// dropLocked forgets d, dest's, once it has neither members nor
// watchers: its seq restarting then misleads no one, and a client naming
// ever new rooms leaves nothing behind. Caller holds m.mu.
func (m *MemoryStore) dropLocked(dest string, d *memDest) {
	if len(d.members) == 0 && d.watched <= 0 {
		delete(m.dests, dest)
	}
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{dests: make(map[string]*memDest)}
}

var _ Store = (*MemoryStore)(nil)

// Set implements Store.
func (m *MemoryStore) Set(_ context.Context, dest, principal string, sessions int, info string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[dest]
	if d == nil {
		if sessions <= 0 {
			return nil
		}
		d = &memDest{members: make(map[string]*Member)}
		m.dests[dest] = d
	}
	var ev Event
	switch old := d.members[principal]; {
	case sessions > 0 && old != nil:
		old.Sessions, old.Info = sessions, info
		return nil
	case sessions > 0:
		d.members[principal] = &Member{Principal: principal, Sessions: sessions, Info: info}
		d.seq++
		ev = Event{Seq: d.seq, Op: OpJoin, Principal: principal, Info: info}
	case old != nil:
		delete(d.members, principal)
		d.seq++
		ev = Event{Seq: d.seq, Op: OpLeave, Principal: principal}
	default:
		return nil
	}
	if m.deliver != nil {
		m.deliver(dest, []Event{ev})
	}
	m.dropLocked(dest, d)
	return nil
}

// Snapshot implements Store.
func (m *MemoryStore) Snapshot(_ context.Context, dest string, limit int) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[dest]
	if d == nil {
		return Snapshot{}, nil
	}
	all := make([]Member, 0, len(d.members))
	for _, mb := range d.members {
		all = append(all, *mb)
	}
	return snapshotOf(d.seq, all, limit), nil
}

// snapshotOf sorts members by principal and keeps the first limit.
func snapshotOf(seq uint64, members []Member, limit int) Snapshot {
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.Principal, b.Principal) })
	s := Snapshot{Seq: seq, Count: len(members), Members: members}
	if limit >= 0 && len(members) > limit {
		s.Members = members[:limit]
	}
	return s
}

// SnapshotOf returns a Snapshot at seq of members, sorted by principal
// and cut to the first limit (no cut when limit is negative). Stores
// other than MemoryStore use it to answer Snapshot alike.
func SnapshotOf(seq uint64, members []Member, limit int) Snapshot {
	return snapshotOf(seq, members, limit)
}

// Attach implements Store.
func (m *MemoryStore) Attach(deliver func(dest string, events []Event)) {
	m.mu.Lock()
	m.deliver = deliver
	m.mu.Unlock()
}

// Watched implements Store: a watched destination keeps its seq while it
// has no members, so that its watchers' positions stay valid.
func (m *MemoryStore) Watched(dest string, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.dests[dest]
	if d == nil {
		if !on {
			return
		}
		d = &memDest{members: make(map[string]*Member)}
		m.dests[dest] = d
	}
	if on {
		d.watched++
		return
	}
	d.watched--
	m.dropLocked(dest, d)
}
