package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/presence"
)

// TestPresenceMembers reads a room's members from a tracker, and refuses
// a missing destination and one that keeps no presence.
func TestPresenceMembers(t *testing.T) {
	tr := presence.New(presence.Config{Enabled: func(d string) bool { return strings.HasPrefix(d, "/topic/room.") }})
	t.Cleanup(tr.Close)
	f := startWith(t, func(c *Config) { c.Presence = tr })
	leave, _ := tr.Join("/topic/room.1", "alice", "Alice")
	defer leave()
	poll.Until(t, 10*time.Second, func() error {
		if s, _ := tr.Members(context.Background(), "/topic/room.1"); s.Count != 1 {
			return errors.New("alice not stored yet")
		}
		return nil
	})
	code, v := f.call(t, "GET", "/api/v1/presence?destination=/topic/room.1", "s3cret", "")
	ms, _ := v["members"].([]any)
	if code != http.StatusOK || v["count"] != 1.0 || v["seq"] != 1.0 || len(ms) != 1 ||
		ms[0].(map[string]any)["principal"] != "alice" || ms[0].(map[string]any)["info"] != "Alice" {
		t.Errorf("GET presence of room.1 = %d %v, want alice with her info", code, v)
	}
	for _, tt := range []struct {
		query string
		want  int
	}{
		{"", http.StatusBadRequest},
		{"?destination=room", http.StatusBadRequest},
		{"?destination=/topic/chat", http.StatusNotFound},
	} {
		if code, v := f.call(t, "GET", "/api/v1/presence"+tt.query, "s3cret", ""); code != tt.want || v["field"] != "destination" {
			t.Errorf("GET presence%s = %d %v, want %d naming destination", tt.query, code, v, tt.want)
		}
	}
}
