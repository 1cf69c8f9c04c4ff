package server

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestPageHeapKeepsEarliest offers positions out of order to a heap of
// three and checks it keeps the three earliest, in order, and says when
// one did not fit.
func TestPageHeapKeepsEarliest(t *testing.T) {
	h := pageHeap{max: 3}
	var overflow []bool
	for _, since := range []int64{50, 10, 40, 30, 60, 20} {
		overflow = append(overflow, h.offer(SessionPosition{Since: since, ID: "s"}, listed{}))
	}
	if want := []bool{false, false, false, true, true, true}; !slices.Equal(overflow, want) {
		t.Fatalf("overflow = %v, want %v", overflow, want)
	}
	var got []int64
	for _, e := range h.sorted() {
		got = append(got, e.pos.Since)
	}
	if want := []int64{10, 20, 30}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
	if z := (pageHeap{}); z.offer(SessionPosition{Since: 1}, listed{}) != true || len(z.sorted()) != 0 {
		t.Fatal("a heap of none keeps an entry")
	}
}

// TestDestSet steps a destination's sessions through one session (held
// inline), a second (a map), repeated subscriptions and their removal.
func TestDestSet(t *testing.T) {
	a, b := &session{}, &session{}
	names := func(d *destSet) []string {
		var out []string
		for _, l := range d.appendTo(nil) {
			out = append(out, l.name)
		}
		slices.Sort(out)
		return out
	}
	var d destSet
	steps := []struct {
		name      string
		do        func() bool // reports emptiness for removals
		wantEmpty bool
		want      []string
	}{
		{"add a", func() bool { d.add(a, "alice"); return false }, false, []string{"alice"}},
		{"add a again", func() bool { d.add(a, "alice"); return false }, false, []string{"alice"}},
		{"remove one of a's", func() bool { return d.remove(a, false) }, false, []string{"alice"}},
		{"add b", func() bool { d.add(b, "bob"); return false }, false, []string{"alice", "bob"}},
		{"add b again", func() bool { d.add(b, "bob"); return false }, false, []string{"alice", "bob"}},
		{"remove a's last", func() bool { return d.remove(a, false) }, false, []string{"bob"}},
		{"remove a, absent", func() bool { return d.remove(a, false) }, false, []string{"bob"}},
		{"remove all of b's", func() bool { return d.remove(b, true) }, true, nil},
	}
	for _, st := range steps {
		if empty := st.do(); empty != st.wantEmpty {
			t.Fatalf("%s: empty = %v, want %v", st.name, empty, st.wantEmpty)
		}
		if got := names(&d); !slices.Equal(got, st.want) || d.len() != len(st.want) {
			t.Fatalf("%s: sessions %v (len %d), want %v", st.name, got, d.len(), st.want)
		}
	}
	var solo destSet
	solo.add(a, "alice")
	solo.add(a, "alice")
	if solo.remove(b, true) || !solo.remove(a, true) || solo.len() != 0 {
		t.Fatal("removing all of the only session's subscriptions does not empty the set")
	}
}

// TestSessionPositionOrder checks the listing's order: by time, then by
// id for sessions upgraded in the same nanosecond.
func TestSessionPositionOrder(t *testing.T) {
	for _, c := range []struct {
		p, q SessionPosition
		want bool
	}{
		{SessionPosition{1, "b"}, SessionPosition{2, "a"}, true},
		{SessionPosition{2, "a"}, SessionPosition{1, "b"}, false},
		{SessionPosition{1, "a"}, SessionPosition{1, "b"}, true},
		{SessionPosition{1, "b"}, SessionPosition{1, "b"}, false},
	} {
		if got := c.p.less(c.q); got != c.want {
			t.Errorf("%v.less(%v) = %v, want %v", c.p, c.q, got, c.want)
		}
	}
}

// inOrder returns the ids at the indexes i and j of order, in order.
func inOrder(order []string, i, j int) []string {
	if j < i {
		i, j = j, i
	}
	return []string{order[i], order[j]}
}

// ids returns the ids of a page's sessions.
func ids(p SessionPage) []string {
	out := make([]string, 0, len(p.Sessions))
	for _, s := range p.Sessions {
		out = append(out, s.ID)
	}
	return out
}

// listAll pages through q, limit sessions at a time, and returns the ids
// in order.
func listAll(t *testing.T, ts *testServer, q SessionQuery) []string {
	t.Helper()
	var all []string
	for range 100 {
		p := ts.ListSessions(q)
		all = append(all, ids(p)...)
		if !p.More {
			return all
		}
		if len(p.Sessions) == 0 {
			t.Fatalf("page after %v: more, but no sessions", q.After)
		}
		q.After = p.Sessions[len(p.Sessions)-1].Position()
	}
	t.Fatal("more than 100 pages")
	return nil
}

// TestListSessions lists real sessions: all of them page by page, by
// principal, by destination (a user queue by the destination it is
// published to) and by both; a session that ends between two pages is
// skipped, one that opens between them comes last, none is listed twice;
// unsubscribing and ending take sessions out of the destination index.
func TestListSessions(t *testing.T) {
	ts := startServer(t, Config{Chain: loginChain()})
	names := []string{"alice", "bob", "alice", "carol", "dave"}
	clients := make([]*rawClient, len(names))
	order := make([]string, len(names))
	for i, n := range names {
		clients[i] = dialRaw(t, ts.url)
		order[i] = connectAs(clients[i], n).Get("session")
	}
	// Sessions upgraded in the same nanosecond are ordered by id: sort
	// the clients into the listing's order.
	pos := map[string]SessionPosition{}
	for _, n := range names {
		for _, s := range ts.SessionsOf(n) {
			pos[s.ID] = s.Position()
		}
	}
	idx := []int{0, 1, 2, 3, 4}
	slices.SortFunc(idx, func(a, b int) int {
		if pos[order[a]].less(pos[order[b]]) {
			return -1
		}
		return 1
	})
	sorted := make([]*rawClient, len(idx))
	sortedIDs := make([]string, len(idx))
	sortedNames := make([]string, len(idx))
	for i, j := range idx {
		sorted[i], sortedIDs[i], sortedNames[i] = clients[j], order[j], names[j]
	}
	clients, order, names = sorted, sortedIDs, sortedNames
	// at returns the position in the order of the i-th name given.
	at := func(name string, nth int) int {
		for i, n := range names {
			if n == name {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		t.Fatalf("no %s #%d", name, nth)
		return -1
	}
	a1, b, a2, c := at("alice", 0), at("bob", 0), at("alice", 1), at("carol", 0)
	sub := func(c *rawClient, id, dest string) {
		t.Helper()
		c.Send(fmt.Sprintf("SUBSCRIBE\nid:%s\ndestination:%s\nreceipt:r-%s\n\n\x00", id, dest, id))
		c.Expect("RECEIPT")
	}
	unsub := func(c *rawClient, id string) {
		t.Helper()
		c.Send(fmt.Sprintf("UNSUBSCRIBE\nid:%s\nreceipt:u-%s\n\n\x00", id, id))
		c.Expect("RECEIPT")
	}
	sub(clients[a1], "1", "/topic/room.1")
	sub(clients[a1], "2", "/topic/room.1") // a second subscription, same destination
	sub(clients[b], "1", "/topic/room.1")
	sub(clients[c], "1", "/topic/room.2")
	sub(clients[a2], "1", "/user/queue/chat")

	p := ts.ListSessions(SessionQuery{Limit: 2})
	if got := ids(p); !slices.Equal(got, order[:2]) || !p.More || p.Matched != 5 {
		t.Fatalf("first page %v more=%v matched=%d, want %v more=true matched=5", got, p.More, p.Matched, order[:2])
	}
	if s := p.Sessions[0]; s.Principal != names[0] || s.RemoteIP != "127.0.0.1" || s.Counts.Received < 1 || s.Position() != pos[order[0]] {
		t.Fatalf("first session %+v", s)
	}
	if got := listAll(t, ts, SessionQuery{Limit: 2}); !slices.Equal(got, order) {
		t.Fatalf("all pages %v, want %v", got, order)
	}
	if got := listAll(t, ts, SessionQuery{Limit: 500}); !slices.Equal(got, order) {
		t.Fatalf("one page %v, want %v", got, order)
	}
	if p := ts.ListSessions(SessionQuery{}); len(p.Sessions) != 0 || !p.More || p.Matched != 5 {
		t.Fatalf("limit 0: %+v, want counts only", p)
	}

	for _, c := range []struct {
		q    SessionQuery
		want []string
	}{
		{SessionQuery{Principal: "alice"}, []string{order[a1], order[a2]}},
		{SessionQuery{Destination: "/topic/room.1"}, inOrder(order, a1, b)},
		{SessionQuery{Destination: "/topic/room.2"}, []string{order[c]}},
		{SessionQuery{Destination: "/user/alice/queue/chat"}, []string{order[a2]}},
		{SessionQuery{Destination: "/user/queue/chat"}, nil},
		{SessionQuery{Principal: "alice", Destination: "/topic/room.1"}, []string{order[a1]}},
		{SessionQuery{Principal: "bob", Destination: "/topic/room.2"}, nil},
		{SessionQuery{Principal: "nobody"}, nil},
	} {
		q := c.q
		q.Limit = 1
		got := listAll(t, ts, q)
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.q, got, c.want)
		}
		if p := ts.ListSessions(SessionQuery{Principal: c.q.Principal, Destination: c.q.Destination}); p.Matched != len(c.want) {
			t.Errorf("%+v: matched %d, want %d", c.q, p.Matched, len(c.want))
		}
	}

	// Unsubscribing: a session stays listed while one of its
	// subscriptions is on the destination.
	{
		unsub(clients[a1], "1")
		if got := listAll(t, ts, SessionQuery{Destination: "/topic/room.1", Limit: 10}); !slices.Equal(got, inOrder(order, a1, b)) {
			t.Fatalf("after one of two UNSUBSCRIBEs: %v", got)
		}
		unsub(clients[a1], "2")
		unsub(clients[a1], "never-subscribed")
		if got := listAll(t, ts, SessionQuery{Destination: "/topic/room.1", Limit: 10}); !slices.Equal(got, []string{order[b]}) {
			t.Fatalf("after both UNSUBSCRIBEs: %v", got)
		}
		sub(clients[a1], "3", "/topic/room.1")
		if got := listAll(t, ts, SessionQuery{Destination: "/topic/room.1", Limit: 10}); !slices.Equal(got, inOrder(order, a1, b)) {
			t.Fatalf("after subscribing again: %v", got)
		}
	}

	// Churn between pages: the first session of the next page ends, a
	// new one opens.
	p = ts.ListSessions(SessionQuery{Limit: 2})
	clients[2].Send("DISCONNECT\nreceipt:bye\n\n\x00")
	clients[2].Expect("RECEIPT")
	waitFor(t, func() bool { return ts.Sessions() == 4 })
	late := dialRaw(t, ts.url)
	lateID := connectAs(late, "erin").Get("session")
	rest := listAll(t, ts, SessionQuery{Limit: 2, After: p.Sessions[1].Position()})
	if want := []string{order[3], order[4], lateID}; !slices.Equal(rest, want) {
		t.Fatalf("after churn: %v, want %v", rest, want)
	}
	dest2 := map[int]string{a1: "/topic/room.1", b: "/topic/room.1", c: "/topic/room.2", a2: "/user/alice/queue/chat"}[2]
	if dest2 == "" {
		dest2 = "/topic/none"
	}
	if got := listAll(t, ts, SessionQuery{Destination: dest2, Limit: 10}); slices.Contains(got, order[2]) {
		t.Fatalf("an ended session is still indexed by its destination %s: %v", dest2, got)
	}

	// Ending every session leaves the indexes empty.
	for i, c := range clients {
		if i != 2 {
			c.Send("DISCONNECT\nreceipt:bye\n\n\x00")
			c.Expect("RECEIPT")
		}
	}
	late.Send("DISCONNECT\nreceipt:bye\n\n\x00")
	late.Expect("RECEIPT")
	waitFor(t, func() bool { return ts.Sessions() == 0 })
	for i := range ts.reg.dests {
		ds := &ts.reg.dests[i]
		ds.mu.Lock()
		n := len(ds.m)
		ds.mu.Unlock()
		if n != 0 {
			t.Fatalf("destination index shard %d holds %d destinations after every session ended", i, n)
		}
	}
}

// benchRegistry returns a server whose registry holds n connected
// sessions (bare values, no connection), a tenth of them subscribed to
// /topic/lobby.
func benchRegistry(b *testing.B, n int) *Server {
	b.Helper()
	srv := &Server{}
	srv.reg.init()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for i := range n {
		s := &session{srv: srv, opened: t0 + int64(i)}
		s.st.ID = fmt.Sprintf("s%06d", i)
		s.connected.Store(true)
		srv.reg.add(s)
		srv.reg.bind(s)
		if i%10 == 0 {
			srv.reg.subscribed(s, "/topic/lobby")
		}
	}
	return srv
}

// BenchmarkListSessions lists the first page of 500 among 10,000
// sessions (the whole registry is looked at), and a page of the lobby's
// 1,000 subscribers.
func BenchmarkListSessions(b *testing.B) {
	srv := benchRegistry(b, 10_000)
	for _, c := range []struct {
		name string
		q    SessionQuery
	}{
		{"all", SessionQuery{Limit: 500}},
		{"destination", SessionQuery{Destination: "/topic/lobby", Limit: 500}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p := srv.ListSessions(c.q); len(p.Sessions) != 500 {
					b.Fatalf("%d sessions", len(p.Sessions))
				}
			}
		})
	}
}
