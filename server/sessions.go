package server

import (
	"container/heap"
	"slices"
	"strings"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
)

// SessionInfo describes one open, connected session.
type SessionInfo struct {
	// ID is the session id (the CONNECTED session header).
	ID string
	// Principal is the session's principal name.
	Principal string
	// RemoteIP is the client's address (see Config.ClientIP).
	RemoteIP string
	// Since is when the WebSocket upgrade completed.
	Since time.Time
	// Counts is the session's frame accounting so far.
	Counts interceptor.Counts
}

// SessionsOf returns the connected sessions of the principal on this
// instance, oldest first.
func (s *Server) SessionsOf(principal string) []SessionInfo {
	ss := s.reg.ofPrincipal(principal)
	out := make([]SessionInfo, 0, len(ss))
	for _, x := range ss {
		out = append(out, SessionInfo{ID: x.st.ID, Principal: principal, RemoteIP: x.st.RemoteIP.String(), Since: time.Unix(0, x.opened), Counts: x.st.Counts()})
	}
	slices.SortFunc(out, func(a, b SessionInfo) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Disconnect ends, with ERROR "disconnected by the server" (detail as its
// body) and a close, the connected sessions of principal on this
// instance, and the session whose id is sessionID; an empty argument
// selects nothing. It returns how many sessions it ended; what is already
// queued for them is sent first.
func (s *Server) Disconnect(principal, sessionID, detail string) int {
	var targets []*session
	if principal != "" {
		targets = s.reg.ofPrincipal(principal)
	}
	if sessionID != "" {
		if x, ok := s.reg.get(sessionID); ok && !slices.Contains(targets, x) {
			targets = append(targets, x)
		}
	}
	for _, x := range targets {
		x.fail(ending{reason: outcome.CloseDisconnected, detail: detail})
	}
	return len(targets)
}

// SessionQuery selects the sessions ListSessions returns. The zero value
// selects every connected session of this instance, oldest first, from
// the start.
type SessionQuery struct {
	// Principal, when not empty, selects the sessions of this principal.
	Principal string
	// Destination, when not empty, selects the sessions with a
	// subscription on this broker destination: a topic as subscribed
	// (/topic/game.7), or a user queue as published to
	// (/user/alice/queue/chat).
	Destination string
	// After is where the page starts: the sessions after this position,
	// in the listing's order. The zero value starts at the oldest.
	After SessionPosition
	// Limit is the most sessions returned. Zero or negative: none, only
	// the counts.
	Limit int
}

// SessionPosition is a session's place in ListSessions' order: by
// WebSocket upgrade time, then by id. Neither changes while a session
// lives, so a listing resumed after a position never returns a session
// twice, and skips the sessions that ended in between.
type SessionPosition struct {
	// Since is the upgrade time in Unix nanoseconds.
	Since int64
	// ID is the session id.
	ID string
}

// Position returns the place of the session in ListSessions' order.
func (i SessionInfo) Position() SessionPosition {
	return SessionPosition{Since: i.Since.UnixNano(), ID: i.ID}
}

// less reports whether p comes before q.
func (p SessionPosition) less(q SessionPosition) bool {
	if p.Since != q.Since {
		return p.Since < q.Since
	}
	return p.ID < q.ID
}

// SessionPage is one page of ListSessions.
type SessionPage struct {
	// Sessions are at most Limit sessions after the query's position,
	// oldest first.
	Sessions []SessionInfo
	// More reports that sessions after the last one matched too: the
	// next page starts at Sessions[len-1].Position().
	More bool
	// Matched is how many connected sessions of this instance matched
	// the query's principal and destination, whatever its position.
	Matched int
}

// ListSessions returns a page of the connected sessions of this instance
// that q selects. It looks at every session it may select (the
// principal's, the destination's subscribers', or all) and keeps the
// first q.Limit after q.After in a bounded heap, so its memory is
// O(q.Limit) whatever the number of sessions, and it holds no registry
// lock while it builds the page.
func (s *Server) ListSessions(q SessionQuery) SessionPage {
	top := pageHeap{max: max(q.Limit, 0)}
	var page SessionPage
	consider := func(l listed) {
		if q.Principal != "" && l.name != q.Principal {
			return
		}
		page.Matched++
		pos := SessionPosition{Since: l.s.opened, ID: l.s.st.ID}
		if q.After != (SessionPosition{}) && !q.After.less(pos) {
			return
		}
		if top.offer(pos, l) {
			page.More = true
		}
	}
	switch {
	case q.Destination != "":
		for _, l := range s.reg.subscribedTo(q.Destination) {
			consider(l)
		}
	case q.Principal != "":
		for _, x := range s.reg.ofPrincipal(q.Principal) {
			consider(listed{s: x, name: q.Principal})
		}
	default:
		s.reg.eachConnected(consider)
	}
	entries := top.sorted()
	page.Sessions = make([]SessionInfo, 0, len(entries))
	for _, e := range entries {
		x := e.l.s
		page.Sessions = append(page.Sessions, SessionInfo{ID: x.st.ID, Principal: e.l.name, RemoteIP: x.st.RemoteIP.String(),
			Since: time.Unix(0, x.opened), Counts: x.st.Counts()})
	}
	return page
}

// pageEntry is a session ListSessions may return, at its position.
type pageEntry struct {
	pos SessionPosition
	l   listed
}

// pageHeap keeps the max earliest entries offered: a max-heap on the
// position, whose root is the latest entry kept and is dropped when an
// earlier one arrives. The zero value with max set is ready.
type pageHeap struct {
	max     int
	entries []pageEntry
}

func (h *pageHeap) Len() int           { return len(h.entries) }
func (h *pageHeap) Less(i, j int) bool { return h.entries[j].pos.less(h.entries[i].pos) }
func (h *pageHeap) Swap(i, j int)      { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *pageHeap) Push(x any)         { h.entries = append(h.entries, x.(pageEntry)) }
func (h *pageHeap) Pop() any {
	e := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	return e
}

// offer adds the session l at pos, and reports whether an entry did not
// fit in the page (l itself or a later one it displaced).
func (h *pageHeap) offer(pos SessionPosition, l listed) (overflow bool) {
	if len(h.entries) < h.max {
		heap.Push(h, pageEntry{pos: pos, l: l})
		return false
	}
	if h.max == 0 || !pos.less(h.entries[0].pos) {
		return true
	}
	h.entries[0] = pageEntry{pos: pos, l: l}
	heap.Fix(h, 0)
	return true
}

// sorted returns the entries kept, earliest first.
func (h *pageHeap) sorted() []pageEntry {
	slices.SortFunc(h.entries, func(a, b pageEntry) int {
		switch {
		case a.pos.less(b.pos):
			return -1
		case b.pos.less(a.pos):
			return 1
		}
		return 0
	})
	return h.entries
}
