package principallimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// tableShards splits the entries so that principals publishing at once
// rarely wait for each other's map lookups.
const tableShards = 64

// table holds the entries, at most max of them, by a keyed hash of rule
// and principal: a fixed size per entry however long a name is, and a
// collision (two names alike in 64 bits) is as likely as guessing the
// process's random seed.
//
// An entry is expired once its window ended: it holds nothing a new
// window needs. A shard at its share of max drops an expired entry to
// make room, or, with none expired, any one (counted as evicted): that
// principal's next frames start a window here afresh, so at most one
// window's optimistic frames of it go uncounted, and Redis still holds
// its count.
type table struct {
	seed     maphash.Seed
	perShard int
	evicted  func()
	shards   [tableShards]shard
}

// shard is one part of the table.
type shard struct {
	// mu guards m.
	mu sync.Mutex
	m  map[uint64]*entry
}

func newTable(limit int, evicted func()) *table {
	t := &table{seed: maphash.MakeSeed(), perShard: max(1, (limit+tableShards-1)/tableShards), evicted: evicted}
	for i := range t.shards {
		t.shards[i].m = make(map[uint64]*entry)
	}
	return t
}

// get returns the entry of rule and principal, creating it if needed.
func (t *table) get(now time.Time, rule, principal string) *entry {
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString(rule)
	h.WriteByte(0)
	h.WriteString(principal)
	k := h.Sum64()
	s := &t.shards[k%tableShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[k]; ok {
		return e
	}
	if len(s.m) >= t.perShard {
		t.makeRoom(s, now)
	}
	e := &entry{}
	s.m[k] = e
	return e
}

// makeRoom drops one entry of the full shard s, held locked: the first
// expired one met, else the last one looked at. Go's map iteration
// starts at a random place, so the one evicted is arbitrary.
func (t *table) makeRoom(s *shard, now time.Time) {
	n := now.UnixNano()
	var last uint64
	for k, e := range s.m {
		if e.expires.Load() <= n {
			delete(s.m, k)
			return
		}
		last = k
	}
	delete(s.m, last)
	t.evicted()
}

// len returns how many entries the table holds.
func (t *table) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
