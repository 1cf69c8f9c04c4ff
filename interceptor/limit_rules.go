package interceptor

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// RuleDefault is the rule name a LimitStage reports for frames no
// destination rule matched (see LimitConfig.Dropped). No DestinationRule
// may be called so. It is outcome.RuleDefault, the label those drops are
// counted under.
const RuleDefault = outcome.RuleDefault

// MaxDestinationRules is the most rules a DestinationRules may hold, and
// so the most per-rule limiters one session can make the server keep.
const MaxDestinationRules = 256

// DestinationRule is what the LimitStage does with frames to the
// destinations one rule matches.
type DestinationRule struct {
	// Name labels the rule's drops (LimitConfig.Dropped); required,
	// unique, not RuleDefault.
	Name string
	// Send is the rule's own per-session limit, counted apart from the
	// session's default limiter for the commands in Commands. Nil means
	// the rule's frames count against the default limiter as frames to
	// any other destination do.
	Send *sessionlimit.Config
	// Commands are the commands Send counts: SEND and SUBSCRIBE, the
	// client frames that name a destination. Empty means those of the
	// stage's LimitConfig.Commands. A frame the rule matches whose command
	// Send does not count is counted by the default limiter if that one
	// counts it.
	Commands []string
	// ReadOnly refuses a SEND to the rule's destinations with ERROR
	// "permission denied" and a close (outcome.RejectPermission), as the
	// principal's send permissions do.
	ReadOnly bool
}

// DestinationRules is an immutable set of destination rules for a
// LimitStage: a matcher that names the rule a destination falls under and
// what each rule does. Build it with NewDestinationRules and install it
// with LimitConfig.Rules or LimitStage.SetRules. It is safe for
// concurrent use.
type DestinationRules struct {
	match  func(dest string) int
	rules  []destRule
	byName map[string]int
}

// destRule is a DestinationRule ready for the per-frame path.
type destRule struct {
	name     string
	factory  *sessionlimit.Factory // nil: the default limiter counts
	cfg      sessionlimit.Config   // the factory's, with defaults
	own      bool                  // Commands was given
	send     bool                  // Send counts SEND (when own)
	sub      bool                  // Send counts SUBSCRIBE (when own)
	readOnly bool
}

// NewDestinationRules validates rules and returns them with match, which
// must return the index in rules of the rule a destination falls under,
// or -1 for none, without blocking (package policy's Rules.Index is
// one). The rules are copied.
func NewDestinationRules(match func(dest string) int, rules []DestinationRule) (*DestinationRules, error) {
	if match == nil {
		return nil, configErrorf("DestinationRules: match is nil")
	}
	if len(rules) > MaxDestinationRules {
		return nil, configErrorf("DestinationRules: %d rules, at most %d", len(rules), MaxDestinationRules)
	}
	t := &DestinationRules{match: match, rules: make([]destRule, len(rules)), byName: make(map[string]int, len(rules))}
	for i, r := range rules {
		if r.Name == "" || r.Name == RuleDefault {
			return nil, configErrorf("DestinationRules: rule %d: name %q is empty or reserved", i, r.Name)
		}
		if _, dup := t.byName[r.Name]; dup {
			return nil, configErrorf("DestinationRules: rule %q is defined twice", r.Name)
		}
		t.byName[r.Name] = i
		d := destRule{name: r.Name, readOnly: r.ReadOnly}
		if r.Send != nil {
			f, err := sessionlimit.NewFactory(*r.Send)
			if err != nil {
				return nil, fmt.Errorf("interceptor: rule %q: %w", r.Name, err)
			}
			d.factory, d.cfg = f, f.Config()
		}
		for _, c := range r.Commands {
			switch c {
			case stompframe.CommandSend:
				d.send = true
			case stompframe.CommandSubscribe:
				d.sub = true
			default:
				return nil, configErrorf("DestinationRules: rule %q: command %q names no destination; want SEND or SUBSCRIBE", r.Name, c)
			}
			d.own = true
		}
		t.rules[i] = d
	}
	return t, nil
}

// Len returns the number of rules; 0 for nil.
func (t *DestinationRules) Len() int {
	if t == nil {
		return 0
	}
	return len(t.rules)
}

// ruleLimiter is a session's limiter for one rule with a limit of its own.
type ruleLimiter struct {
	rule int // index in the session's ruleTable
	lim  sessionlimit.Limiter
}

// SetRules installs t as the destination rules of every session's next
// frame; nil removes them. Sessions keep the per-rule limiters of rules
// that t holds under the same name with the same limit; a rule that
// changed starts its count afresh.
func (st *LimitStage) SetRules(t *DestinationRules) { st.rules.Store(t) }

// Rules returns the installed destination rules, nil for none.
func (st *LimitStage) Rules() *DestinationRules { return st.rules.Load() }

// destination returns the rule of the frame's destination, or -1: only
// SEND and SUBSCRIBE name one.
func destinationRule(t *DestinationRules, f *stompframe.Frame) int {
	if f.Command != stompframe.CommandSend && f.Command != stompframe.CommandSubscribe {
		return -1
	}
	dest, ok := f.Lookup("destination")
	if !ok {
		return -1
	}
	return t.match(dest)
}

// handleRule is Handle for a frame that rule i of t matched.
func (st *LimitStage) handleRule(t *DestinationRules, i int, s *Session, f *stompframe.Frame, now time.Time) Result {
	r := &t.rules[i]
	if r.readOnly && f.Command == stompframe.CommandSend {
		st.dropped(r.name, 1)
		return RejectFrame(outcome.RejectPermission, "permission denied",
			fmt.Sprintf("destination rule %q is read-only: clients may not SEND to it", r.name))
	}
	if InTransaction(f) {
		return Continue()
	}
	if r.factory != nil && r.counts(st, f.Command) {
		if s.ruleLimiterFor(t, i).AllowAt(now) {
			return Continue()
		}
		return st.overLimit(s, now, 1, r.name)
	}
	if !st.limits(f.Command) {
		return Continue()
	}
	if s.Limiter == nil {
		s.Limiter = st.factory.New()
	}
	if s.Limiter.AllowAt(now) {
		return Continue()
	}
	return st.overLimit(s, now, 1, r.name)
}

// counts reports whether the rule's own limit counts cmd.
func (r *destRule) counts(st *LimitStage, cmd string) bool {
	if !r.own {
		return st.limits(cmd)
	}
	switch cmd {
	case stompframe.CommandSend:
		return r.send
	case stompframe.CommandSubscribe:
		return r.sub
	}
	return false
}

// ruleLimiterFor returns the session's limiter for rule i of t, making
// it on first use. When t is not the table the session last used, the
// limiters of rules t keeps unchanged (same name, same limit) are carried
// over and the others dropped, so a reload resets only what it changed.
// The session holds at most one limiter per rule of t.
func (s *Session) ruleLimiterFor(t *DestinationRules, i int) sessionlimit.Limiter {
	if s.ruleTable != t {
		s.remapRuleLimiters(t)
	}
	for _, rl := range s.ruleLimiters {
		if rl.rule == i {
			return rl.lim
		}
	}
	lim := t.rules[i].factory.New()
	s.ruleLimiters = append(s.ruleLimiters, ruleLimiter{rule: i, lim: lim})
	return lim
}

// remapRuleLimiters moves the session's per-rule limiters to t.
func (s *Session) remapRuleLimiters(t *DestinationRules) {
	old := s.ruleTable
	kept := s.ruleLimiters[:0]
	for _, rl := range s.ruleLimiters {
		if old == nil {
			break
		}
		prev := &old.rules[rl.rule]
		j, ok := t.byName[prev.name]
		if ok && t.rules[j].factory != nil && t.rules[j].cfg == prev.cfg {
			kept = append(kept, ruleLimiter{rule: j, lim: rl.lim})
		}
	}
	clear(s.ruleLimiters[len(kept):])
	s.ruleLimiters = kept
	s.ruleTable = t
}

// dropped reports n frames the stage stopped under rule.
func (st *LimitStage) dropped(rule string, n int) {
	if st.cfg.Dropped != nil {
		st.cfg.Dropped(rule, n)
	}
}
