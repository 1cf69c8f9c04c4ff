package policy

import "testing"

// TestPresence reads the presence switch and answers it by destination,
// from the first matching rule.
func TestPresence(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(zonesYAML + `destinations:
  - {name: quiet, pattern: /topic/room.quiet, presence: false}
  - {name: rooms, pattern: /topic/room.*, presence: true}
  - {name: chat, pattern: /topic/chat.*}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRules(p.Destinations)
	if err != nil {
		t.Fatal(err)
	}
	for dest, want := range map[string]bool{
		"/topic/room.42":    true,
		"/topic/room.quiet": false,
		"/topic/chat.lobby": false,
		"/queue/other":      false,
	} {
		if got := rs.Presence(dest); got != want {
			t.Errorf("Presence(%q) = %v, want %v", dest, got, want)
		}
	}
}
