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

	// dests indexes connected sessions by the broker destinations they
	// are subscribed to, for Server.ListSessions, sharded by the
	// destination's hash. It holds no more entries than the broker holds
	// subscriptions.
	dests [registryShards]struct {
		mu sync.Mutex
		m  map[string]*destSet
	}
}

// destRef is a session's place in the destination index.
type destRef struct {
	name string // the session's principal name, read on its reader
	n    int    // its subscriptions on the destination
}

// destSet is one destination's sessions. Most destinations have one
// session (a user queue, a room of one), held inline; a map is made only
// when a second one subscribes, so that an idle session with its own
// queue costs a few words here, and adding or removing a session costs
// O(1) however many the destination has.
type destSet struct {
	solo    *session
	soloRef destRef
	// many holds every session once there are two or more; solo is then
	// nil. It stays once made.
	many map[*session]destRef
}

// add counts one more subscription of s, whose principal is name.
func (d *destSet) add(s *session, name string) {
	switch {
	case d.many != nil:
		ref := d.many[s]
		d.many[s] = destRef{name: name, n: ref.n + 1}
	case d.solo == nil || d.solo == s:
		d.solo, d.soloRef = s, destRef{name: name, n: d.soloRef.n + 1}
	default:
		d.many = map[*session]destRef{d.solo: d.soloRef, s: {name: name, n: 1}}
		d.solo, d.soloRef = nil, destRef{}
	}
}

// remove counts one subscription of s fewer, or all of them, and reports
// whether the destination has no session left.
func (d *destSet) remove(s *session, all bool) (empty bool) {
	if d.many == nil {
		if d.solo == s {
			d.soloRef.n--
			if all || d.soloRef.n <= 0 {
				d.solo, d.soloRef = nil, destRef{}
			}
		}
		return d.solo == nil
	}
	if ref, ok := d.many[s]; ok {
		if all || ref.n <= 1 {
			delete(d.many, s)
		} else {
			d.many[s] = destRef{name: ref.name, n: ref.n - 1}
		}
	}
	return len(d.many) == 0
}

// appendTo appends the destination's sessions to out.
func (d *destSet) appendTo(out []listed) []listed {
	if d.solo != nil {
		return append(out, listed{s: d.solo, name: d.soloRef.name})
	}
	for s, ref := range d.many {
		out = append(out, listed{s: s, name: ref.name})
	}
	return out
}

// len returns how many sessions the destination has.
func (d *destSet) len() int {
	if d.solo != nil {
		return 1
	}
	return len(d.many)
}

func (r *registry) init() {
	r.seed = maphash.MakeSeed()
	for i := range r.shards {
		r.shards[i].m = make(map[string]*session)
	}
	for i := range r.principals {
		r.principals[i].m = make(map[string][]*session)
	}
	for i := range r.dests {
		r.dests[i].m = make(map[string]*destSet)
	}
}

// subscribed records that s has one more subscription on the broker
// destination dest. It is called on the session's reader, after
// Broker.Subscribe.
func (r *registry) subscribed(s *session, dest string) {
	name := s.principalName()
	ds := &r.dests[r.shard(dest)]
	ds.mu.Lock()
	defer ds.mu.Unlock()
	set := ds.m[dest]
	if set == nil {
		set = &destSet{}
		ds.m[dest] = set
	}
	set.add(s, name)
}

// unsubscribed records that s has one subscription fewer on dest. It is
// called on the session's reader, after Broker.Unsubscribe.
func (r *registry) unsubscribed(s *session, dest string) {
	r.dropDest(s, dest, false)
}

// dropDest removes one subscription of s on dest from the index, or all
// of them.
func (r *registry) dropDest(s *session, dest string, all bool) {
	ds := &r.dests[r.shard(dest)]
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if set := ds.m[dest]; set != nil && set.remove(s, all) {
		delete(ds.m, dest)
	}
}

// dropDests removes s from the destination index: every destination of
// its subscriptions. It runs on the session's reader, which owns s.subs.
func (r *registry) dropDests(s *session) {
	for _, sub := range s.subs {
		r.dropDest(s, sub.Destination, true)
	}
}

// listed is one session as ListSessions finds it: the session and its
// principal name, taken from an index.
type listed struct {
	s    *session
	name string
}

// eachConnected calls fn for every connected session with its principal
// name, shard by shard, without holding a shard lock during the calls.
func (r *registry) eachConnected(fn func(listed)) {
	var batch []listed
	for i := range r.principals {
		ps := &r.principals[i]
		ps.mu.Lock()
		for name, set := range ps.m {
			for _, s := range set {
				batch = append(batch, listed{s: s, name: name})
			}
		}
		ps.mu.Unlock()
		for _, l := range batch {
			fn(l)
		}
		batch = batch[:0]
	}
}

// subscribedTo returns the sessions subscribed to the broker destination
// dest, with their principal names.
func (r *registry) subscribedTo(dest string) []listed {
	ds := &r.dests[r.shard(dest)]
	ds.mu.Lock()
	defer ds.mu.Unlock()
	set := ds.m[dest]
	if set == nil {
		return nil
	}
	return set.appendTo(make([]listed, 0, set.len()))
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
	r.dropDests(s)
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
