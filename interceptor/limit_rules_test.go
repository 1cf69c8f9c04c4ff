package interceptor

import (
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
)

// prefixMatch returns a matcher that picks the first of prefixes dest
// starts with, the index of its rule; policy.Rules.Index plays this part
// in the server.
func prefixMatch(prefixes ...string) func(string) int {
	return func(dest string) int {
		for i, p := range prefixes {
			if strings.HasPrefix(dest, p) {
				return i
			}
		}
		return -1
	}
}

func newRules(t testing.TB, match func(string) int, rules ...DestinationRule) *DestinationRules {
	t.Helper()
	r, err := NewDestinationRules(match, rules)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func perSecond(n int) *sessionlimit.Config {
	return &sessionlimit.Config{Limit: n, Window: time.Second}
}

// dropTally records LimitConfig.Dropped calls by rule.
type dropTally map[string]int

func (d dropTally) add(rule string, n int) { d[rule] += n }

// sendTo hands n SENDs to dest at now through c and returns how many
// passed.
func sendTo(t *testing.T, c *Chain, s *Session, dest string, now time.Time, n int) int {
	t.Helper()
	f := frame("SEND", "destination", dest)
	passed := 0
	for range n {
		switch r := c.Handle(s, f, now); r.Outcome {
		case Pass:
			passed++
		case Drop:
		default:
			t.Fatalf("SEND to %s: %+v", dest, r)
		}
	}
	return passed
}

// TestLimitStageRulesSideBySide sends to two rules with limits of their
// own, a rule without one and an unmatched destination in one session,
// in one window and the next: each holds its own number, the drops are
// told by rule, and received = passed + dropped.
func TestLimitStageRulesSideBySide(t *testing.T) {
	t.Parallel()
	tally := dropTally{}
	rules := newRules(t, prefixMatch("/topic/chat.", "/topic/game.", "/topic/misc."),
		DestinationRule{Name: "chat", Send: perSecond(5)},
		DestinationRule{Name: "game", Send: perSecond(30)},
		DestinationRule{Name: "misc"}, // counts against the default limit
	)
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 10}, Rules: rules, Dropped: tally.add})
	rec := &recorder{}
	c := NewChain(rec, st)
	s := &Session{}
	steps := []struct {
		at   time.Duration
		dest string
		n    int
		want int
	}{
		{0, "/topic/chat.a", 8, 5},
		{0, "/topic/game.1", 40, 30},
		{0, "/topic/chat.b", 1, 0}, // one limit for the whole rule
		{0, "/topic/misc.x", 6, 6},
		{0, "/queue/x", 6, 4}, // the default limit: 10 shared with misc
		{time.Second, "/topic/chat.a", 6, 5},
		{time.Second, "/topic/game.1", 30, 30},
		{time.Second, "/queue/x", 11, 10},
	}
	for _, step := range steps {
		if got := sendTo(t, c, s, step.dest, t0.Add(step.at), step.n); got != step.want {
			t.Errorf("at %v: %d SENDs to %s: %d passed, want %d", step.at, step.n, step.dest, got, step.want)
		}
	}
	want := dropTally{"chat": 3 + 1 + 1, "game": 10, "misc": 0, RuleDefault: 2 + 1}
	want["misc"] = 0
	for rule, n := range want {
		if tally[rule] != n {
			t.Errorf("drops of rule %q: %d, want %d (all %v)", rule, tally[rule], n, tally)
		}
	}
	cnt := s.Counts()
	if cnt.Received != cnt.Passed+cnt.Dropped || int(cnt.Dropped) != len(rec.dropped) || cnt.Dropped != 18 {
		t.Errorf("counts %+v with %d drops told, want received = passed + dropped and 18 drops", cnt, len(rec.dropped))
	}
	if len(s.ruleLimiters) != 2 {
		t.Errorf("session holds %d rule limiters, want 2 (one per rule with a limit that it used)", len(s.ruleLimiters))
	}
}

// TestLimitStageRuleMiscDrops: a rule without a limit of its own labels
// the default limiter's drops of its frames with its name.
func TestLimitStageRuleMiscDrops(t *testing.T) {
	t.Parallel()
	tally := dropTally{}
	rules := newRules(t, prefixMatch("/topic/misc."), DestinationRule{Name: "misc"})
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 2}, Rules: rules, Dropped: tally.add})
	c := NewChain(nil, st)
	s := &Session{}
	if got := sendTo(t, c, s, "/topic/misc.a", t0, 5); got != 2 {
		t.Errorf("passed %d, want 2", got)
	}
	if tally["misc"] != 3 || tally[RuleDefault] != 0 {
		t.Errorf("drops %v, want 3 under misc", tally)
	}
}

// TestLimitStageRuleCommands: a rule's own limit counts only its
// commands; its other frames meet the default limiter if that counts them.
func TestLimitStageRuleCommands(t *testing.T) {
	t.Parallel()
	rules := newRules(t, prefixMatch("/topic/"),
		DestinationRule{Name: "subs", Send: perSecond(1), Commands: []string{"SUBSCRIBE"}})
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 3}, Rules: rules})
	s := &Session{}
	sub := frame("SUBSCRIBE", "destination", "/topic/a", "id", "1")
	if r := st.Handle(s, sub, t0); r.Outcome != Pass {
		t.Fatalf("first SUBSCRIBE: %+v", r)
	}
	if r := st.Handle(s, sub, t0); r.Outcome != Drop {
		t.Fatalf("second SUBSCRIBE in the window: %+v, want drop", r)
	}
	// SENDs to the same destinations: the rule does not count them, the
	// default limiter (SEND only) does.
	if got := sendN(t, st, s, t0, 5); got != 3 {
		t.Errorf("SENDs passed %d, want 3 (the default limit)", got)
	}
	// Default commands: the stage's (SEND here), so a SUBSCRIBE passes.
	rules = newRules(t, prefixMatch("/topic/"), DestinationRule{Name: "sends", Send: perSecond(1)})
	st.SetRules(rules)
	for range 3 {
		if r := st.Handle(s, sub, t0); r.Outcome != Pass {
			t.Fatalf("SUBSCRIBE under a SEND-only rule: %+v, want pass", r)
		}
	}
}

// TestLimitStageReadOnly: a SEND to a read-only rule's destination, in a
// transaction or not, ends the session as a SEND outside the permissions
// does; a SUBSCRIBE to it passes.
func TestLimitStageReadOnly(t *testing.T) {
	t.Parallel()
	tally := dropTally{}
	rules := newRules(t, prefixMatch("/topic/news"), DestinationRule{Name: "news", ReadOnly: true})
	st := newLimitStage(t, LimitConfig{Rules: rules, Dropped: tally.add})
	for _, f := range []struct{ kv []string }{{[]string{"destination", "/topic/news"}}, {[]string{"destination", "/topic/news", "transaction", "t"}}} {
		r := st.Handle(&Session{}, frame("SEND", f.kv...), t0)
		if r.Outcome != Reject || r.Reason != outcome.RejectPermission || r.Message != "permission denied" || !strings.Contains(r.Detail, `"news"`) {
			t.Errorf("SEND %v: %+v, want reject permission denied naming the rule", f.kv, r)
		}
	}
	if r := st.Handle(&Session{}, frame("SUBSCRIBE", "destination", "/topic/news", "id", "1"), t0); r.Outcome != Pass {
		t.Errorf("SUBSCRIBE: %+v, want pass", r)
	}
	if tally["news"] != 2 {
		t.Errorf("drops %v, want 2 under news", tally)
	}
}

// TestLimitStageSetRules replaces the rules between frames of a live
// session: an unchanged rule keeps its count, a changed one starts
// afresh with its new limit, a removed one falls back to the default.
func TestLimitStageSetRules(t *testing.T) {
	t.Parallel()
	match := prefixMatch("/topic/a.", "/topic/b.")
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 100}, Rules: newRules(t, match,
		DestinationRule{Name: "a", Send: perSecond(5)},
		DestinationRule{Name: "b", Send: perSecond(5)})})
	c := NewChain(nil, st)
	s := &Session{}
	sendTo(t, c, s, "/topic/a.x", t0, 4)
	sendTo(t, c, s, "/topic/b.x", t0, 4)
	// b is changed to 2 per second, a kept as it was, in the same window.
	st.SetRules(newRules(t, match,
		DestinationRule{Name: "a", Send: perSecond(5)},
		DestinationRule{Name: "b", Send: perSecond(2)}))
	if got := sendTo(t, c, s, "/topic/a.x", t0, 5); got != 1 {
		t.Errorf("unchanged rule a: %d passed, want the 1 left of its 5", got)
	}
	if got := sendTo(t, c, s, "/topic/b.x", t0, 5); got != 2 {
		t.Errorf("changed rule b: %d passed, want 2 (a fresh count at its new limit)", got)
	}
	// The rules removed: both fall to the default limit of 100.
	st.SetRules(nil)
	if got := sendTo(t, c, s, "/topic/b.x", t0, 50); got != 50 {
		t.Errorf("no rules: %d passed, want 50", got)
	}
	// The same rules in another order: limiters follow names, not
	// positions (by position, a would meet b's 2 per second).
	st.SetRules(newRules(t, prefixMatch("/topic/b.", "/topic/a."),
		DestinationRule{Name: "b", Send: perSecond(2)},
		DestinationRule{Name: "a", Send: perSecond(5)}))
	if got := sendTo(t, c, s, "/topic/a.x", t0.Add(time.Second), 6); got != 5 {
		t.Errorf("rule a reordered, next window: %d passed, want 5", got)
	}
	if len(s.ruleLimiters) > 2 {
		t.Errorf("session holds %d rule limiters, want at most 2", len(s.ruleLimiters))
	}
}

// TestLimitStageRuleTransactions: SENDs in a transaction to a rule's
// destination are charged at COMMIT against the default limiter, labelled
// default.
func TestLimitStageRuleTransactions(t *testing.T) {
	t.Parallel()
	tally := dropTally{}
	rules := newRules(t, prefixMatch("/topic/chat."), DestinationRule{Name: "chat", Send: perSecond(1)})
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 3}, Rules: rules, Dropped: tally.add})
	c := NewChain(nil, st)
	s := &Session{}
	tx := frame("SEND", "destination", "/topic/chat.a", "transaction", "t")
	for range 4 {
		if r := c.Handle(s, tx, t0); r.Outcome != Pass {
			t.Fatalf("SEND in a transaction: %+v", r)
		}
	}
	if r := c.Commit(s, 4, t0); r.Outcome != Drop {
		t.Errorf("Commit(4) over the default limit of 3: %+v, want drop", r)
	}
	if tally[RuleDefault] != 4 {
		t.Errorf("drops %v, want 4 under default", tally)
	}
}

func TestNewDestinationRulesErrors(t *testing.T) {
	t.Parallel()
	m := prefixMatch()
	tests := []struct {
		name  string
		match func(string) int
		rules []DestinationRule
		want  string
	}{
		{"nil match", nil, nil, "match is nil"},
		{"no name", m, []DestinationRule{{}}, `name "" is empty or reserved`},
		{"reserved", m, []DestinationRule{{Name: RuleDefault}}, `name "default" is empty or reserved`},
		{"twice", m, []DestinationRule{{Name: "a"}, {Name: "a"}}, `rule "a" is defined twice`},
		{"bad limit", m, []DestinationRule{{Name: "a", Send: &sessionlimit.Config{Limit: -1}}}, `rule "a": sessionlimit: Limit -1 is negative`},
		{"ack", m, []DestinationRule{{Name: "a", Send: perSecond(1), Commands: []string{"ACK"}}}, `command "ACK" names no destination`},
		{"too many", m, make([]DestinationRule, MaxDestinationRules+1), "257 rules, at most 256"},
	}
	for _, tt := range tests {
		_, err := NewDestinationRules(tt.match, tt.rules)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestLimitStageRulesAllocs holds the rule path to zero allocations once
// a session has its limiters.
func TestLimitStageRulesAllocs(t *testing.T) {
	rules := newRules(t, prefixMatch("/topic/chat.", "/topic/misc."),
		DestinationRule{Name: "chat", Send: perSecond(5)}, DestinationRule{Name: "misc"})
	st := newLimitStage(t, LimitConfig{Rules: rules, Dropped: func(string, int) {}})
	s := &Session{}
	chat, misc := frame("SEND", "destination", "/topic/chat.a"), frame("SEND", "destination", "/topic/misc.a")
	st.Handle(s, chat, t0)
	st.Handle(s, misc, t0)
	allocs := testing.AllocsPerRun(100, func() {
		st.Handle(s, chat, t0)
		st.Handle(s, misc, t0)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame pair, want 0", allocs)
	}
}

// BenchmarkChainRules is BenchmarkChain with destination rules installed:
// "rule" sends to a destination whose rule has a limit of its own,
// "unmatched" to one no rule matches. The matcher is a prefix scan of
// two rules; policy's BenchmarkRulesMatch50 measures the real one.
func BenchmarkChainRules(b *testing.B) {
	for _, bc := range []struct{ name, dest string }{{"rule", "/topic/room.42"}, {"unmatched", "/queue/x"}} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := NewPrincipalStage(PrincipalConfig{})
			if err != nil {
				b.Fatal(err)
			}
			rules := newRules(b, prefixMatch("/topic/game.", "/topic/room."),
				DestinationRule{Name: "game", Send: perSecond(30)}, DestinationRule{Name: "room", Send: perSecond(20)})
			l, err := NewLimitStage(LimitConfig{Logger: quietLogger(), Rules: rules})
			if err != nil {
				b.Fatal(err)
			}
			c := NewChain(&countingObserver{}, p, l)
			s := connected(b, c, "1")
			f := frame("SEND", "destination", bc.dest, "content-type", "application/json")
			b.ReportAllocs()
			b.ResetTimer()
			now := t0
			for range b.N {
				now = now.Add(perFrame)
				if r := c.Handle(s, f, now); r.Outcome != Pass {
					b.Fatalf("Handle = %+v, want pass", r)
				}
			}
		})
	}
}
