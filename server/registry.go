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
		// names holds the principal name of each bound session.
		names map[string]string
	}

	// principals indexes connected sessions by principal name, for
	// Server.SessionsOf and Server.Disconnect, sharded by the name's hash
	// like the sessions are by id. A bound session's name is kept in its
	// id shard's names.
	principals [registryShards]struct {
		mu sync.Mutex
		m  map[string]map[*session]struct{}
	}
}

func (r *registry) init() {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*session)
		r.shards[i].names = make(map[string]string)
	}
	for i := range r.principals {
		r.principals[i].m = make(map[string]map[*session]struct{})
	}
}

// bind records that s, once connected, belongs to the principal name.
func (r *registry) bind(s *session, name string) {
	sh := &r.shards[r.shard(s.st.ID)]
	sh.mu.Lock()
	sh.names[s.st.ID] = name
	sh.mu.Unlock()
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	set := ps.m[name]
	if set == nil {
		set = make(map[*session]struct{})
		ps.m[name] = set
	}
	set[s] = struct{}{}
}

// unbind removes s from the principal index.
func (r *registry) unbind(s *session) {
	sh := &r.shards[r.shard(s.st.ID)]
	sh.mu.Lock()
	name, ok := sh.names[s.st.ID]
	delete(sh.names, s.st.ID)
	sh.mu.Unlock()
	if !ok {
		return
	}
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	set := ps.m[name]
	delete(set, s)
	if len(set) == 0 {
		delete(ps.m, name)
	}
}

// ofPrincipal returns the connected sessions of the principal name.
func (r *registry) ofPrincipal(name string) []*session {
	ps := &r.principals[r.shard(name)]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make([]*session, 0, len(ps.m[name]))
	for s := range ps.m[name] {
		out = append(out, s)
	}
	return out
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
