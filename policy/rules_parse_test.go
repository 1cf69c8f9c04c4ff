package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/history"
)

// zonesYAML is a valid zones list for documents that test destinations.
const zonesYAML = `
zones:
  - {name: ws_handshake, rate: 3r/s, routes: [{method: GET, path: /ws, upstream: ws}]}
`

func TestParseDestinations(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(zonesYAML + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    send: {limit: 5}
  - name: game_input
    pattern: /topic/game.*.input
    send: {limit: 30, window: 1s}
    commands: [SEND, SUBSCRIBE]
    principal: {limit: 60, window: 2s}
  - name: game_state
    pattern: /topic/game.*.state
    delivery: latest
    max_subscribers: 12
    client_send: false
  - name: announcements
    pattern: /topic/announcements
    client_send: true
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Name: "chat", Pattern: "/topic/chat.*", Send: Limit{5, time.Second}},
		{Name: "game_input", Pattern: "/topic/game.*.input", Send: Limit{30, time.Second},
			Commands: []string{"SEND", "SUBSCRIBE"}, Principal: Limit{60, 2 * time.Second}},
		{Name: "game_state", Pattern: "/topic/game.*.state", Delivery: DeliveryLatest, MaxSubscribers: 12, ReadOnly: true},
		{Name: "announcements", Pattern: "/topic/announcements"},
	}
	if !reflect.DeepEqual(p.Destinations, want) {
		t.Errorf("Destinations =\n%+v\nwant\n%+v", p.Destinations, want)
	}
	// Default carries no rule, and a copy does not share them.
	if len(Default().Destinations) != 0 {
		t.Errorf("the default policy has rules: %+v", Default().Destinations)
	}
	c := p.clone()
	c.Destinations[1].Commands[0] = "X"
	if p.Destinations[1].Commands[0] != "SEND" {
		t.Error("clone shares Commands")
	}
}

// TestParseDestinationErrors is a step table of documents with one
// mistake each: every error names the rule (index and, once known, name)
// and the field.
func TestParseDestinationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rules, want string
	}{
		{"not a list", `destinations: {name: a}`, `policy: line 4: destinations must be a list`},
		{"unknown field", `destinations: [{name: a, pattern: /a, sned: {limit: 1}}]`, `policy: line 4: destinations[0] "a": unknown field "sned"`},
		{"repeated field", "destinations:\n  - {name: a, pattern: /a, pattern: /b}", `destinations[0] "a": field "pattern" is repeated`},
		{"no name", `destinations: [{pattern: /a}]`, `policy: destinations[0]: name: missing`},
		{"bad name", `destinations: [{name: a-b, pattern: /a}]`, `policy: destinations[0] "a-b": name: must be lower-case letters, digits and _`},
		{"no pattern", `destinations: [{name: a}]`, `policy: destinations[0] "a": pattern: missing`},
		{"pattern list", `destinations: [{name: a, pattern: [/a]}]`, `destinations[0] "a": pattern must be a single value`},
		{"negative window", "destinations:\n  - {name: a, pattern: /a}\n  - {name: b, pattern: /b}\n  - {name: chat, pattern: /c, send: {limit: 5, window: -1s}}",
			`policy: destinations[2] "chat": send.window: -1s is negative`},
		{"bad window", `destinations: [{name: a, pattern: /a, send: {limit: 5, window: soon}}]`, `destinations[0] "a": send.window: "soon" is not a duration`},
		{"zero window", `destinations: [{name: a, pattern: /a, send: {limit: 5, window: 0s}}]`, `destinations[0] "a": send.window: 0 is not a window`},
		{"no limit", `destinations: [{name: a, pattern: /a, send: {window: 1s}}]`, `destinations[0] "a": send.limit: missing or 0`},
		{"limit not a number", `destinations: [{name: a, pattern: /a, send: {limit: lots}}]`, `destinations[0] "a": send.limit: "lots" is not a whole number`},
		{"limit unknown field", `destinations: [{name: a, pattern: /a, send: {rate: 5}}]`, `destinations[0] "a": send: unknown field "rate"`},
		{"principal", `destinations: [{name: a, pattern: /a, principal: {limit: -2}}]`, `destinations[0] "a": principal.limit: -2 is negative`},
		{"commands not a list", `destinations: [{name: a, pattern: /a, send: {limit: 1}, commands: SEND}]`, `destinations[0] "a": commands: must be a list`},
		{"ack", `destinations: [{name: a, pattern: /a, send: {limit: 1}, commands: [ACK]}]`, `destinations[0] "a": commands: ACK carries no destination header`},
		{"client_send", `destinations: [{name: a, pattern: /a, client_send: no way}]`, `destinations[0] "a": client_send: "no way" is not true or false`},
		{"delivery", `destinations: [{name: a, pattern: /a, delivery: newest}]`, `destinations[0] "a": delivery: "newest" is not all or latest`},
		{"subscribers", `destinations: [{name: a, pattern: /a, max_subscribers: 1.5}]`, `destinations[0] "a": max_subscribers: "1.5" is not a whole number`},
		{"history field", `destinations: [{name: a, pattern: /a, history: {size: 100}}]`, `destinations[0] "a": history: unknown field "size"`},
		{"history keep", `destinations: [{name: a, pattern: /a, history: {keep: 100001}}]`, `destinations[0] "a": history.keep: 100001 is outside 0..100000`},
		{"history keep zero", `destinations: [{name: a, pattern: /a, history: {keep: 0}}]`, `destinations[0] "a": history.keep: 0 keeps nothing`},
		{"history for", `destinations: [{name: a, pattern: /a, history: {for: 25h}}]`, `destinations[0] "a": history.for: 25h0m0s is outside 0..24h0m0s`},
		{"history for text", `destinations: [{name: a, pattern: /a, history: {for: soon}}]`, `destinations[0] "a": history.for: "soon" is not a duration`},
		{"history latest", `destinations: [{name: a, pattern: /a, delivery: latest, history: {}}]`, `destinations[0] "a": history: does not combine with delivery: latest`},
		{"presence", `destinations: [{name: a, pattern: /a, presence: {size: 1}}]`, `policy: line 4: destinations[0] "a": presence: "" is not true or false`},
		{"duplicate name", "destinations:\n  - {name: a, pattern: /a}\n  - {name: a, pattern: /b}", `destinations[1] "a": name: already used by destinations[0]`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(zonesYAML + tt.rules + "\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want one containing %q and matching ErrInvalid", tt.name, err, tt.want)
		}
	}
}

// TestParseTooManyRules refuses a list over MaxRules before reading it.
func TestParseTooManyRules(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(zonesYAML + "destinations:\n")
	for range MaxRules + 1 {
		b.WriteString("  - {}\n")
	}
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "destinations: 257 rules, at most 256") {
		t.Errorf("error %v, want the rule count refused", err)
	}
}

func TestParseHistory(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(zonesYAML + `
destinations:
  - {name: chat, pattern: "/topic/chat.*", history: {keep: 500, for: 5m}}
  - {name: room, pattern: "/topic/room.*", history: {}}
  - {name: plain, pattern: "/topic/plain"}
`))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := NewRules(p.Destinations)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dest string
		want history.Retention
		ok   bool
	}{
		{"/topic/chat.a", history.Retention{Keep: 500, For: 5 * time.Minute}, true},
		{"/topic/room.b", history.Retention{Keep: history.DefaultKeep, For: history.DefaultFor}, true},
		{"/topic/plain", history.Retention{}, false},
		{"/topic/other", history.Retention{}, false},
	} {
		if got, ok := rs.History(tt.dest); got != tt.want || ok != tt.ok {
			t.Errorf("History(%q) = %+v, %v; want %+v, %v", tt.dest, got, ok, tt.want, tt.ok)
		}
	}
	c := p.clone()
	c.Destinations[0].History.Keep = 1
	if p.Destinations[0].History.Keep != 500 {
		t.Error("clone shares History")
	}
}
