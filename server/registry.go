package server

import (
	"hash/maphash"
	"slices"
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

	// principals indexes connected sessions by principal name, for
	// Server.SessionsOf and Server.Disconnect, sharded by the name's hash
	// like the sessions are by id. A principal holds a few sessions (the
	// per-principal cap) and an anonymous one exactly one, so a slice is
	// all an entry needs.
	principals [registryShards]struct {
		mu sync.Mutex
		m  map[string][]*session
	}
}

func (r *registry) init() {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*session)
	}
	for i := range r.principals {
		r.principals[i].m = make(map[string][]*session)
	}
}

// bind records that s, connected, belongs to its principal. It is
// called once, at CONNECT, on the session's reader goroutine, which also
// removes the session; the principal's name does not change after
// CONNECT (a newer token must name the same principal).
func (r *registry) bind(s *session) {
	name := s.principalName()
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	ps.m[name] = append(ps.m[name], s)
	ps.mu.Unlock()
}

// unbind removes s from the principal index.
func (r *registry) unbind(s *session) {
	if !s.connected.Load() {
		return
	}
	name := s.principalName()
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	set := ps.m[name]
	if i := slices.Index(set, s); i >= 0 {
		set = slices.Delete(set, i, i+1)
	}
	if len(set) == 0 {
		delete(ps.m, name)
	} else {
		ps.m[name] = set
	}
}

// ofPrincipal returns the connected sessions of the principal name.
func (r *registry) ofPrincipal(name string) []*session {
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Clone(ps.m[name])
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
	r.unbind(s)
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
