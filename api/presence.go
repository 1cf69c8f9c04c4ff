package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/stompgate/stompgate/presence"
)

// Presence reads the members of the destinations that keep presence
// (Config.Presence); *presence.Tracker is one.
type Presence interface {
	// Enabled reports whether dest keeps presence.
	Enabled(dest string) bool
	// Members reads dest's members, across every instance sharing the
	// store, bounding its own wait.
	Members(ctx context.Context, dest string) (presence.Snapshot, error)
}

var _ Presence = (*presence.Tracker)(nil)

// presenceResponse is the 200 answer of GET /api/v1/presence.
type presenceResponse struct {
	Destination string            `json:"destination"`
	Seq         uint64            `json:"seq"`
	Count       int               `json:"count"`
	Members     []presence.Member `json:"members"`
}

// presenceMembers answers GET /api/v1/presence?destination=...: the
// members of a destination that keeps presence, listing at most the
// tracker's member limit, with the count of all.
func (h *handler) presenceMembers(r *http.Request) (int, any) {
	dest := r.URL.Query().Get("destination")
	if !strings.HasPrefix(dest, "/") {
		return badRequest("destination", fmt.Sprintf("destination %.40q: want a destination such as /topic/room.42", dest))
	}
	if h.cfg.Presence == nil || !h.cfg.Presence.Enabled(dest) {
		return http.StatusNotFound, apiError{Error: "no rule keeps the presence of this destination", Field: "destination"}
	}
	snap, err := h.cfg.Presence.Members(r.Context(), dest)
	if err != nil {
		return http.StatusServiceUnavailable, apiError{Error: "the member list could not be read; try again"}
	}
	ms := snap.Members
	if ms == nil {
		ms = []presence.Member{}
	}
	return http.StatusOK, presenceResponse{Destination: dest, Seq: snap.Seq, Count: snap.Count, Members: ms}
}
