package sessioncap

import (
	"hash/maphash"
	"sync"
)

// memoryShards is the number of independently locked parts of a
// MemoryStore: enough that handshakes on a many-core machine rarely meet
// on one mutex.
const memoryShards = 64

// MemoryStore counts the sessions this process holds per key. It has no
// limit of its own on the number of keys: an entry exists only while its
// key holds a session, so it is bounded by the open sessions.
//
// The zero value is not usable; create one with NewMemoryStore. A
// MemoryStore is safe for concurrent use.
type MemoryStore struct {
	seed   maphash.Seed
	shards [memoryShards]memShard
}

type memShard struct {
	mu sync.Mutex
	// held counts the sessions of each key; a key at zero is deleted.
	// Guarded by mu.
	held map[string]int
	// pad keeps neighbouring shards' mutexes off one cache line.
	_ [64]byte
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].held = make(map[string]int)
	}
	return s
}

// TryAcquire takes a slot of key if it holds fewer than max, and reports
// whether it did and how many the key held before.
func (s *MemoryStore) TryAcquire(key string, max int) (held int, ok bool) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	held = sh.held[key]
	if held >= max {
		return held, false
	}
	sh.held[key] = held + 1
	return held, true
}

// Add takes a slot of key whatever it holds: for a session another store
// admitted.
func (s *MemoryStore) Add(key string) {
	sh := s.shard(key)
	sh.mu.Lock()
	sh.held[key]++
	sh.mu.Unlock()
}

// Release gives back one slot of key; a key holding none is left alone.
func (s *MemoryStore) Release(key string) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	switch n := sh.held[key]; {
	case n > 1:
		sh.held[key] = n - 1
	case n == 1:
		delete(sh.held, key)
	}
}

// Held returns the slots key holds.
func (s *MemoryStore) Held(key string) int {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.held[key]
}

// Len returns the number of keys holding at least one slot.
func (s *MemoryStore) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.held)
		sh.mu.Unlock()
	}
	return n
}

func (s *MemoryStore) shard(key string) *memShard {
	return &s.shards[maphash.String(s.seed, key)%memoryShards]
}
