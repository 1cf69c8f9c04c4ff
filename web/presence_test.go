package web

import (
	"strings"
	"testing"
)

// TestPresenceMeta tells the page whether its rooms keep presence, and
// the page has a place for the member list.
func TestPresenceMeta(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		_, page := get(t, Handler(Config{Presence: on}), "GET", "/", nil)
		want := `<meta name="stompgate-presence" content="false">`
		if on {
			want = `<meta name="stompgate-presence" content="true">`
		}
		if !strings.Contains(page, want) || !strings.Contains(page, `id="members"`) {
			t.Errorf("Presence %v: page lacks %s or the member list", on, want)
		}
	}
}
