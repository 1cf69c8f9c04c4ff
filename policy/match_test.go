package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
)

// gameRules are the rules of a chat and a game, docs/policy.md's example.
var gameRules = []Rule{
	{Name: "chat", Pattern: "/topic/chat.*", Send: Limit{5, time.Second}},
	{Name: "game_input", Pattern: "/topic/game.*.input", Send: Limit{30, time.Second}},
	{Name: "game_state", Pattern: "/topic/game.*.state", Delivery: DeliveryLatest, MaxSubscribers: 10},
	{Name: "lobby_ready", Pattern: "/app/lobby.*.ready", Send: Limit{1, time.Second}, Principal: Limit{2, time.Second}},
	{Name: "announcements", Pattern: "/topic/announcements", ReadOnly: true},
	{Name: "app", Pattern: "/app/**"},
}

func mustRules(t testing.TB, rules []Rule) *Rules {
	t.Helper()
	rs, err := NewRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRulesIndex(t *testing.T) {
	t.Parallel()
	rs := mustRules(t, gameRules)
	tests := []struct {
		dest string
		want string // rule name, "" for none
	}{
		{"/topic/chat.lobby", "chat"},
		{"/topic/chat.", "chat"}, // "*" matches an empty run, as in the permissions
		{"/topic/chat.a.b", ""},  // "*" stops at a separator
		{"/topic/chat/a", ""},
		{"/topic/chat", ""},
		{"/topic/game.42.input", "game_input"},
		{"/topic/game.42.state", "game_state"},
		{"/topic/game.42.input.x", ""},
		{"/topic/game..input", "game_input"},
		{"/app/lobby.7.ready", "lobby_ready"}, // first match wins over /app/**
		{"/app/lobby.7.go", "app"},
		{"/app/", "app"},
		{"/app", ""},
		{"/topic/announcements", "announcements"},
		{"/topic/announcements.x", ""},
		{"", ""},
		{".", ""},
		{"/topic/chat.\xff\xfe", "chat"}, // bytes, not runes: a run of non-separators
		{"/topic/\xffchat.a", ""},
		{"/topic/game.\xff.input", "game_input"},
	}
	for _, tt := range tests {
		i := rs.Index(tt.dest)
		got := ""
		if i >= 0 {
			got = rs.Rule(i).Name
		}
		if got != tt.want {
			t.Errorf("Index(%q) = rule %q, want %q", tt.dest, got, tt.want)
		}
		if o := rs.Options(tt.dest); o.Rule != tt.want {
			t.Errorf("Options(%q).Rule = %q, want %q", tt.dest, o.Rule, tt.want)
		}
	}
}

func TestRulesFirstMatchWins(t *testing.T) {
	t.Parallel()
	// The same destination matched by a specific and a broad rule: the
	// order in the policy decides, not the specificity, whichever of the
	// two the index files where.
	broadFirst := mustRules(t, []Rule{{Name: "all", Pattern: "/topic/**"}, {Name: "chat", Pattern: "/topic/chat.*"}})
	if got := broadFirst.Options("/topic/chat.x").Rule; got != "all" {
		t.Errorf("broad rule first: got %q, want all", got)
	}
	specificFirst := mustRules(t, []Rule{{Name: "chat", Pattern: "/topic/chat.*"}, {Name: "all", Pattern: "/topic/**"}})
	if got := specificFirst.Options("/topic/chat.x").Rule; got != "chat" {
		t.Errorf("specific rule first: got %q, want chat", got)
	}
	if got := specificFirst.Options("/topic/news.x").Rule; got != "all" {
		t.Errorf("other destination: got %q, want all", got)
	}
}

func TestRulesOptionsAndPrincipalLimit(t *testing.T) {
	t.Parallel()
	rs := mustRules(t, gameRules)
	if got, want := rs.Options("/topic/game.1.state"), (Options{Rule: "game_state", Latest: true, MaxSubscribers: 10}); got != want {
		t.Errorf("Options = %+v, want %+v", got, want)
	}
	if got := rs.Options("/queue/x"); got != (Options{}) {
		t.Errorf("Options of an unmatched destination = %+v, want zero", got)
	}
	rule, limit, window, ok := rs.PrincipalLimit("/app/lobby.1.ready")
	if rule != "lobby_ready" || limit != 2 || window != time.Second || !ok {
		t.Errorf("PrincipalLimit = %q %d %v %v, want lobby_ready 2 1s true", rule, limit, window, ok)
	}
	if _, _, _, ok := rs.PrincipalLimit("/topic/chat.x"); ok {
		t.Error("PrincipalLimit of a rule without one: ok")
	}
	var none *Rules
	if none.Index("/topic/chat.x") != -1 || none.Len() != 0 || none.Options("/a") != (Options{}) {
		t.Error("nil Rules matched something")
	}
	if r, ok := rs.Match("/topic/chat.a"); !ok || r.Send != (Limit{5, time.Second}) || r.Delivery != DeliveryAll {
		t.Errorf("Match = %+v %v", r, ok)
	}
}

func TestRulesDefaultWindow(t *testing.T) {
	t.Parallel()
	rs := mustRules(t, []Rule{{Name: "a", Pattern: "/a", Send: Limit{Limit: 3}}})
	if got := rs.Rule(0).Send; got != (Limit{3, DefaultRuleWindow}) {
		t.Errorf("Send = %+v, want 3 per %v", got, DefaultRuleWindow)
	}
}

// TestRulesMatchLikePermissions checks that the compiled shapes answer
// exactly as the permissions' matcher for patterns and destinations built
// to sit on each shape's edges.
func TestRulesMatchLikePermissions(t *testing.T) {
	t.Parallel()
	patterns := []string{"/a", "/a/**", "/a/*", "/a.*.b", "/a/**/b", "*", "**", "***", "/a*b*", "/a/*/b/**",
		"/a.*", "/a/*.x", "/x**y", "/**.", ".*.", "/a/b*"}
	dests := []string{"", "/", "/a", "/a/", "/a/b", "/a/b/c", "/a.x.b", "/a..b", "/a.x.y.b", "/a/x/b", "/a/b/x/y",
		"/ab", "/axb", "/a/.x", "/a/b.x", "/xy", "/x", ".", "..", "/a.", "/a.\xff", "\xff", "/a/b\x00"}
	for _, p := range patterns {
		c := compile(p)
		for _, d := range dests {
			if got, want := c.match(d), interceptor.MatchDestination(p, d); got != want {
				t.Errorf("pattern %q (shape %d) on %q: got %v, want %v", p, c.shape, d, got, want)
			}
		}
	}
}

func TestNewRulesErrors(t *testing.T) {
	t.Parallel()
	ok := Rule{Name: "a", Pattern: "/a"}
	tests := []struct {
		name  string
		rules []Rule
		want  string
	}{
		{"no name", []Rule{{Pattern: "/a"}}, `policy: destinations[0]: name: missing`},
		{"bad name", []Rule{ok, {Name: "Chat", Pattern: "/b"}}, `policy: destinations[1] "Chat": name: must be lower-case letters, digits and _`},
		{"long name", []Rule{{Name: strings.Repeat("a", MaxRuleName+1), Pattern: "/a"}}, `: name: 65 bytes, at most 64`},
		{"reserved name", []Rule{{Name: "default", Pattern: "/a"}}, `policy: destinations[0] "default": name: "default" is reserved`},
		{"duplicate name", []Rule{ok, {Name: "a", Pattern: "/b"}}, `policy: destinations[1] "a": name: already used by destinations[0]`},
		{"no pattern", []Rule{{Name: "a"}}, `policy: destinations[0] "a": pattern: missing`},
		{"space in pattern", []Rule{{Name: "a", Pattern: "/a b"}}, `policy: destinations[0] "a": pattern: "/a b" holds a space or control character`},
		{"non-UTF-8 pattern", []Rule{{Name: "a", Pattern: "/a\xff"}}, `policy: destinations[0] "a": pattern: "/a\xff" is not UTF-8`},
		{"long pattern", []Rule{{Name: "a", Pattern: "/" + strings.Repeat("a", MaxPattern)}}, `pattern: 257 bytes, at most 256`},
		{"duplicate pattern", []Rule{ok, {Name: "b", Pattern: "/a"}}, `policy: destinations[1] "b": pattern: "/a" is the pattern of destinations[0] "a", which always matches first`},
		{"negative window", []Rule{ok, {Name: "b", Pattern: "/b"}, {Name: "chat", Pattern: "/c", Send: Limit{5, -time.Second}}}, `policy: destinations[2] "chat": send.window: -1s is negative`},
		{"negative limit", []Rule{{Name: "a", Pattern: "/a", Send: Limit{-1, time.Second}}}, `policy: destinations[0] "a": send.limit: -1 is negative`},
		{"window only", []Rule{{Name: "a", Pattern: "/a", Send: Limit{Window: time.Second}}}, `policy: destinations[0] "a": send.limit: missing`},
		{"long window", []Rule{{Name: "a", Pattern: "/a", Send: Limit{1, 2 * time.Hour}}}, `send.window: 2h0m0s is above the maximum 1h0m0s`},
		{"commands without send", []Rule{{Name: "a", Pattern: "/a", Commands: []string{"SEND"}}}, `policy: destinations[0] "a": commands: set without send`},
		{"ack", []Rule{{Name: "a", Pattern: "/a", Send: Limit{1, time.Second}, Commands: []string{"ACK"}}}, `policy: destinations[0] "a": commands: ACK carries no destination header`},
		{"unknown command", []Rule{{Name: "a", Pattern: "/a", Send: Limit{1, time.Second}, Commands: []string{"send"}}}, `policy: destinations[0] "a": commands: "send" is not SEND or SUBSCRIBE`},
		{"repeated command", []Rule{{Name: "a", Pattern: "/a", Send: Limit{1, time.Second}, Commands: []string{"SEND", "SEND"}}}, `commands: SEND is listed twice`},
		{"delivery", []Rule{{Name: "a", Pattern: "/a", Delivery: "newest"}}, `policy: destinations[0] "a": delivery: "newest" is not all or latest`},
		{"subscribers", []Rule{{Name: "a", Pattern: "/a", MaxSubscribers: -1}}, `policy: destinations[0] "a": max_subscribers: -1 is negative`},
		{"principal", []Rule{{Name: "a", Pattern: "/a", Principal: Limit{0, time.Second}}}, `policy: destinations[0] "a": principal.limit: missing`},
		{"too many", manyRules(MaxRules + 1), `policy: destinations: 257 rules, at most 256`},
	}
	for _, tt := range tests {
		_, err := NewRules(tt.rules)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %v, want one containing %q and matching ErrInvalid", tt.name, err, tt.want)
		}
	}
	if _, err := NewRules(manyRules(MaxRules)); err != nil {
		t.Errorf("%d rules: %v", MaxRules, err)
	}
}

// manyRules returns n valid rules on distinct room kinds.
func manyRules(n int) []Rule {
	rules := make([]Rule, n)
	for i := range rules {
		rules[i] = Rule{Name: fmt.Sprintf("room%03d", i), Pattern: fmt.Sprintf("/topic/room%03d.*", i), Send: Limit{i + 1, time.Second}}
	}
	return rules
}

// benchRules are 50 rules of the shapes a product writes: room kinds
// with one wildcard, game channels with a suffix, literal destinations and
// catch-alls at the end.
func benchRules() []Rule {
	rules := make([]Rule, 0, 50)
	for i := range 20 {
		rules = append(rules, Rule{Name: fmt.Sprintf("room%02d", i), Pattern: fmt.Sprintf("/topic/room%02d.*", i), Send: Limit{5, time.Second}})
	}
	for i := range 10 {
		rules = append(rules, Rule{Name: fmt.Sprintf("game%02d_input", i), Pattern: fmt.Sprintf("/topic/game%02d.*.input", i), Send: Limit{30, time.Second}})
		rules = append(rules, Rule{Name: fmt.Sprintf("game%02d_state", i), Pattern: fmt.Sprintf("/topic/game%02d.*.state", i), Delivery: DeliveryLatest})
	}
	for i := range 6 {
		rules = append(rules, Rule{Name: fmt.Sprintf("news%02d", i), Pattern: fmt.Sprintf("/topic/news%02d", i), ReadOnly: true})
	}
	rules = append(rules,
		Rule{Name: "user_queue", Pattern: "/user/*/queue/**"},
		Rule{Name: "app", Pattern: "/app/**"},
		Rule{Name: "queues", Pattern: "/queue/**"},
		Rule{Name: "topics", Pattern: "/topic/**"},
	)
	return rules
}

// benchDests hit the first, middle and last rules, the catch-alls and
// nothing.
var benchDests = []string{
	"/topic/room00.lobby", "/topic/room19.lobby", "/topic/game09.1234.input", "/topic/game05.77.state",
	"/topic/news05", "/user/alice/queue/inbox", "/app/move", "/queue/jobs", "/topic/other.x", "/exchange/none",
}

func BenchmarkRulesMatch50(b *testing.B) {
	rs := mustRules(b, benchRules())
	if rs.Len() != 50 {
		b.Fatalf("%d rules, want 50", rs.Len())
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; b.Loop(); i++ {
			if rs.Index(benchDests[i%len(benchDests)]) >= 0 {
				n++
			}
		}
		if n == 0 {
			b.Fatal("nothing matched")
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				rs.Index(benchDests[i%len(benchDests)])
				i++
			}
		})
	})
}

// TestRulesMatchAllocs holds Index and Options to zero allocations.
func TestRulesMatchAllocs(t *testing.T) {
	rs := mustRules(t, benchRules())
	allocs := testing.AllocsPerRun(100, func() {
		for _, d := range benchDests {
			rs.Index(d)
			rs.Options(d)
			rs.PrincipalLimit(d)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}

// FuzzRulesMatch checks that the compiled rules pick the rule a plain
// first-match scan with the permissions' matcher picks, and never panic,
// whatever bytes the destination holds.
func FuzzRulesMatch(f *testing.F) {
	for _, d := range benchDests {
		f.Add(d)
	}
	for _, d := range []string{"/topic/chat.lobby", "/topic/game.42.input", "/app/lobby.1.ready", "/topic/chat.", "", "\xff/topic"} {
		f.Add(d)
	}
	all := append(benchRules()[:46:46], gameRules[:5]...)
	all = append(all, Rule{Name: "odd", Pattern: "/x/*a*b/**"})
	all = append(all, benchRules()[46:]...)
	rs := mustRules(f, all)
	f.Fuzz(func(t *testing.T, dest string) {
		want := -1
		for i, r := range all {
			if interceptor.MatchDestination(r.Pattern, dest) {
				want = i
				break
			}
		}
		if got := rs.Index(dest); got != want {
			t.Errorf("Index(%q) = %d, want %d", dest, got, want)
		}
	})
}
