package server

import (
	"hash/maphash"
	"sync"
)

// registryShards spreads sessions over independently locked maps so that
// connects and disconnects on many cores do not queue on one lock.
const registryShards = 32

// registry is the set of open sessions, kept so that Shutdown can reach
// every hijacked connection.
type registry struct {
	seed   maphash.Seed
	shards [registryShards]struct {
		mu sync.Mutex
		// m holds the shard's sessions by id.
		m map[string]*session
	}
}

func (r *registry) init() {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*session)
	}
}

func (r *registry) shard(id string) int {
	return int(maphash.String(r.seed, id) % registryShards)
}

func (r *registry) add(s *session) {
	sh := &r.shards[r.shard(s.st.ID)]
	sh.mu.Lock()
	sh.m[s.st.ID] = s
	sh.mu.Unlock()
}

func (r *registry) remove(s *session) {
	sh := &r.shards[r.shard(s.st.ID)]
	sh.mu.Lock()
	delete(sh.m, s.st.ID)
	sh.mu.Unlock()
}

func (r *registry) len() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// each calls fn for every session, without holding a shard lock during
// the call.
func (r *registry) each(fn func(*session)) {
	var batch []*session
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for _, s := range sh.m {
			batch = append(batch, s)
		}
		sh.mu.Unlock()
		for _, s := range batch {
			fn(s)
		}
		batch = batch[:0]
	}
}

func (r *registry) get(id string) (*session, bool) {
	sh := &r.shards[r.shard(id)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s, ok := sh.m[id]
	return s, ok
}
