package server

import (
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
