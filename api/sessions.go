package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stompgate/stompgate/server"
)

// DefaultPageSize is how many sessions GET /api/v1/sessions returns
// without a limit parameter: a screenful for the person reading it.
const DefaultPageSize = 100

// DefaultMaxPageSize is the largest limit GET /api/v1/sessions takes: a
// page of 500 sessions is about 100 KB of JSON, so no single call makes
// the server encode tens of thousands of sessions at once; a larger
// limit is answered 400.
const DefaultMaxPageSize = 500

// maxCursorLen bounds the cursor parameter: a cursor the API made is a
// Unix time and a session id, some 40 bytes in base64.
const maxCursorLen = 256

// sessionJSON is one session in GET /api/v1/sessions.
type sessionJSON struct {
	ID             string    `json:"id"`
	Principal      string    `json:"principal"`
	RemoteAddress  string    `json:"remote_address"`
	ConnectedSince time.Time `json:"connected_since"`
	Received       uint64    `json:"received"`
	Passed         uint64    `json:"passed"`
	Dropped        uint64    `json:"dropped"`
}

// sessionsResponse is the 200 answer of GET /api/v1/sessions.
type sessionsResponse struct {
	// Instance names the instance that answered: the counts and the
	// sessions are its own.
	Instance string        `json:"instance"`
	Sessions []sessionJSON `json:"sessions"`
	// NextCursor is the cursor of the next page; empty on the last.
	NextCursor string `json:"next_cursor,omitempty"`
	// Matched is how many sessions of this instance match the filters.
	Matched int `json:"matched"`
	// Open is how many sessions this instance holds, connected or not.
	Open int `json:"open"`
}

func (h *handler) sessions(r *http.Request) (int, any) {
	qs := r.URL.Query()
	q := server.SessionQuery{Principal: qs.Get("principal"), Destination: qs.Get("destination"), Limit: DefaultPageSize}
	if v := qs.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > h.cfg.MaxPageSize {
			return badRequest("limit", fmt.Sprintf("limit %.20q: want 1 to %d", v, h.cfg.MaxPageSize))
		}
		q.Limit = n
	}
	if v := qs.Get("cursor"); v != "" {
		pos, ok := decodeCursor(v)
		if !ok {
			return badRequest("cursor", "cursor is not one this API returned as next_cursor")
		}
		q.After = pos
	}
	page := h.cfg.Server.ListSessions(q)
	out := sessionsResponse{Instance: h.cfg.Instance, Sessions: make([]sessionJSON, 0, len(page.Sessions)),
		Matched: page.Matched, Open: h.cfg.Server.Sessions()}
	for _, s := range page.Sessions {
		out.Sessions = append(out.Sessions, sessionJSON{ID: s.ID, Principal: s.Principal, RemoteAddress: s.RemoteIP, ConnectedSince: s.Since.UTC(),
			Received: s.Counts.Received, Passed: s.Counts.Passed, Dropped: s.Counts.Dropped})
	}
	if page.More && len(page.Sessions) > 0 {
		out.NextCursor = encodeCursor(page.Sessions[len(page.Sessions)-1].Position())
	}
	return http.StatusOK, out
}

// encodeCursor makes the cursor of the page after pos: opaque to the
// client, it is pos in base64url.
func encodeCursor(pos server.SessionPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(pos.Since, 10) + "." + pos.ID))
}

// decodeCursor reads a cursor encodeCursor made.
func decodeCursor(c string) (server.SessionPosition, bool) {
	if len(c) > maxCursorLen {
		return server.SessionPosition{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return server.SessionPosition{}, false
	}
	since, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(since, 10, 64)
	if !ok || err != nil || n <= 0 || id == "" {
		return server.SessionPosition{}, false
	}
	return server.SessionPosition{Since: n, ID: id}, true
}
