package policy

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/stompgate/stompgate/history"
)

// MaxRules is the most destination rules a policy may hold. A rule's name
// is a label on the drop metrics, so the number of rules bounds the
// number of series; 256 leaves room for a rule per room kind of a large
// product while keeping a scrape small. It also bounds the per-session
// limiters a session can make the server hold: one per rule it uses.
const MaxRules = 256

// MaxRuleName is the longest rule name accepted, in bytes: a label value
// that stays readable on a dashboard.
const MaxRuleName = 64

// MaxPattern is the longest destination pattern accepted, in bytes. A
// pattern longer than any destination a client can send matches nothing
// useful, and its length bounds the work of matching one.
const MaxPattern = 256

// MaxRuleWindow is the longest window a rule's limit may have. Limits are
// about rates that people and scripts reach within seconds; a window of
// more than an hour is almost surely a typo (1h written for 1s).
const MaxRuleWindow = time.Hour

// DefaultRuleWindow is the window of a rule's limit that gives a limit
// but no window: limits are written per second, like -send-window.
const DefaultRuleWindow = time.Second

// The delivery modes a rule may name.
const (
	// DeliveryAll delivers every message to every subscriber, in order: a
	// subscriber that cannot keep up is closed as a slow consumer. It is
	// what a destination no rule matches gets.
	DeliveryAll = "all"
	// DeliveryLatest keeps at most one pending message per subscriber and
	// destination: a newer message replaces one not yet written, so a slow
	// reader gets the newest state rather than a queue of stale ones.
	DeliveryLatest = "latest"
)

// The STOMP commands a rule's limit can count: the client frames that
// carry a destination header (STOMP 1.2, "Client Frames"). ACK, NACK and
// UNSUBSCRIBE name a subscription or message id, not a destination, so no
// rule can see them.
const (
	CommandSend      = "SEND"
	CommandSubscribe = "SUBSCRIBE"
)

// Limit is a number of frames per window.
type Limit struct {
	// Limit is the number of frames allowed per Window; positive and at
	// most math.MaxInt32 when the limit is set. Zero means unset.
	Limit int
	// Window is the period Limit applies to, at most MaxRuleWindow. Zero
	// means DefaultRuleWindow; negative is invalid.
	Window time.Duration
}

// IsSet reports whether l is a limit at all (a policy file gave it).
func (l Limit) IsSet() bool { return l.Limit != 0 || l.Window != 0 }

// Rule says what the server does for destinations matching Pattern. The
// first rule of a policy that matches a destination applies to it; a
// destination no rule matches keeps the server's defaults (the session's
// -send-limit over -limited-commands, every message delivered, no
// subscriber cap).
//
// The zero value is not valid: it needs a Name and a Pattern.
type Rule struct {
	// Name labels the rule in errors and on the drop metrics: lower-case
	// letters, digits and "_", at most MaxRuleName bytes, unique in the
	// policy. "default" is reserved for frames no rule matches.
	Name string
	// Pattern is the destination pattern, in the language of the
	// principal's send and subscribe permissions
	// (interceptor.MatchDestination): "*" matches any run of characters
	// other than the separators '/' and '.', possibly empty, so
	// "/topic/chat.*" matches "/topic/chat.lobby" but not
	// "/topic/chat.a.b"; "**" matches any run, separators included, so
	// "/app/**" matches everything under "/app/"; every other byte matches
	// itself. Printable UTF-8 without spaces, at most MaxPattern bytes.
	Pattern string
	// Send is the per-session limit on the frames to matching
	// destinations that Commands names, counted by each session apart from
	// its default limit. Unset means the frames count against the
	// session's default limit (-send-limit per -send-window), shared with
	// every destination no rule gives a limit of its own.
	Send Limit
	// Commands are the frames Send counts: CommandSend and
	// CommandSubscribe. Empty means the commands the default limit counts
	// (-limited-commands) that carry a destination. Needs Send.
	Commands []string
	// ReadOnly refuses a client's SEND to a matching destination with an
	// ERROR "permission denied" and a close, as a SEND outside the
	// principal's permissions is refused: the destination is written by
	// the backend through the server API only. In a policy file it is
	// written client_send: false.
	ReadOnly bool
	// Delivery is DeliveryAll or DeliveryLatest. Empty means DeliveryAll.
	Delivery string
	// MaxSubscribers caps the subscriptions a matching destination may
	// have at once; zero means no cap, negative is invalid.
	MaxSubscribers int
	// Principal is the limit on what one principal sends to matching
	// destinations in total, across all its sessions and every instance.
	// Unset means no such limit.
	Principal Limit
	// History, when not nil, keeps a short history of each matching
	// destination, from which a SUBSCRIBE with a position recovers what
	// its client missed (package history); its zero fields mean
	// history.DefaultKeep and history.DefaultFor. In a policy file it is
	// written history: {keep: 1000, for: 10m}. Nil: no history, and the
	// destination pays nothing for the feature.
	History *history.Retention
	// Presence keeps the members of a matching destination, by
	// principal, for the /presence destinations and the server API (see
	// package presence). In a policy file: presence: true.
	Presence bool
}

// defaultRuleName is the label of frames no rule matches; no rule may be
// called that.
const defaultRuleName = "default"

var ruleNameRE = regexp.MustCompile(`^[a-z0-9_]+$`)

// validateRules checks the destination rules of a policy: each in
// isolation, then that names and patterns are unique and that there are
// at most MaxRules.
func validateRules(rules []Rule) error {
	if len(rules) > MaxRules {
		return invalidf("destinations: %d rules, at most %d", len(rules), MaxRules)
	}
	names := make(map[string]int, len(rules))
	patterns := make(map[string]int, len(rules))
	for i, r := range rules {
		if err := r.validate(i); err != nil {
			return err
		}
		if j, dup := names[r.Name]; dup {
			return invalidf("destinations[%d] %q: name: already used by destinations[%d]", i, r.Name, j)
		}
		if j, dup := patterns[r.Pattern]; dup {
			return invalidf("destinations[%d] %q: pattern: %q is the pattern of destinations[%d] %q, which always matches first",
				i, r.Name, r.Pattern, j, rules[j].Name)
		}
		names[r.Name], patterns[r.Pattern] = i, i
	}
	return nil
}

// validate checks one rule; i is its index in the destinations list.
func (r Rule) validate(i int) error {
	errf := func(field, format string, args ...any) error {
		return invalidf("destinations[%d] %q: %s: "+format, append([]any{i, r.Name, field}, args...)...)
	}
	switch {
	case r.Name == "":
		return invalidf("destinations[%d]: name: missing", i)
	case len(r.Name) > MaxRuleName:
		return errf("name", "%d bytes, at most %d", len(r.Name), MaxRuleName)
	case !ruleNameRE.MatchString(r.Name):
		return errf("name", "must be lower-case letters, digits and _")
	case r.Name == defaultRuleName:
		return errf("name", "%q is reserved for destinations no rule matches", defaultRuleName)
	}
	if err := checkPattern(r.Pattern); err != nil {
		return errf("pattern", "%v", err)
	}
	if field, problem := r.Send.check(); field != "" {
		return errf("send."+field, "%s", problem)
	}
	if len(r.Commands) > 0 && !r.Send.IsSet() {
		return errf("commands", "set without send; the commands name what send counts")
	}
	for k, c := range r.Commands {
		switch c {
		case CommandSend, CommandSubscribe:
		case "ACK", "NACK", "UNSUBSCRIBE", "BEGIN", "COMMIT", "ABORT", "CONNECT", "STOMP", "DISCONNECT":
			return errf("commands", "%s carries no destination header (STOMP 1.2), so no rule can count it; want SEND or SUBSCRIBE", c)
		default:
			return errf("commands", "%q is not SEND or SUBSCRIBE", c)
		}
		if slices.Contains(r.Commands[:k], c) {
			return errf("commands", "%s is listed twice", c)
		}
	}
	switch r.Delivery {
	case "", DeliveryAll, DeliveryLatest:
	default:
		return errf("delivery", "%q is not %s or %s", r.Delivery, DeliveryAll, DeliveryLatest)
	}
	if r.MaxSubscribers < 0 {
		return errf("max_subscribers", "%d is negative", r.MaxSubscribers)
	}
	if field, problem := r.Principal.check(); field != "" {
		return errf("principal."+field, "%s", problem)
	}
	if h := r.History; h != nil {
		switch {
		case h.Keep < 0 || h.Keep > history.MaxKeep:
			return errf("history.keep", "%d is outside 0..%d", h.Keep, history.MaxKeep)
		case h.For < 0 || h.For > history.MaxFor:
			return errf("history.for", "%v is outside 0..%v", h.For, history.MaxFor)
		}
		if err := h.Validate(); err != nil {
			return errf("history", "%v", err)
		}
		if r.Delivery == DeliveryLatest {
			return errf("history", "does not combine with delivery: %s, which drops messages a replay would have to hold", DeliveryLatest)
		}
	}
	return nil
}

// check validates a set limit, returning the field at fault ("limit" or
// "window") and what is wrong with it; an unset limit is valid.
func (l Limit) check() (field, problem string) {
	if !l.IsSet() {
		return "", ""
	}
	switch {
	case l.Limit == 0:
		return "limit", "missing"
	case l.Limit < 0:
		return "limit", fmt.Sprintf("%d is negative", l.Limit)
	case l.Limit > math.MaxInt32:
		return "limit", fmt.Sprintf("%d is above %d", l.Limit, math.MaxInt32)
	case l.Window < 0:
		return "window", fmt.Sprintf("%v is negative", l.Window)
	case l.Window > MaxRuleWindow:
		return "window", fmt.Sprintf("%v is above the maximum %v", l.Window, MaxRuleWindow)
	}
	return "", ""
}

// withDefaults returns l with a zero Window of a set limit replaced by
// DefaultRuleWindow.
func (l Limit) withDefaults() Limit {
	if l.IsSet() && l.Window == 0 {
		l.Window = DefaultRuleWindow
	}
	return l
}

// checkPattern validates a destination pattern.
func checkPattern(p string) error {
	switch {
	case p == "":
		return invalidf("missing")
	case len(p) > MaxPattern:
		return invalidf("%d bytes, at most %d", len(p), MaxPattern)
	case !utf8.ValidString(p):
		return invalidf("%q is not UTF-8", p)
	}
	for _, c := range p {
		if c <= ' ' || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return invalidf("%q holds a space or control character", p)
		}
	}
	return nil
}

// cloneRules returns a deep copy of rules.
func cloneRules(rules []Rule) []Rule {
	if rules == nil {
		return nil
	}
	out := slices.Clone(rules)
	for i := range out {
		out[i].Commands = slices.Clone(out[i].Commands)
		if h := out[i].History; h != nil {
			c := *h
			out[i].History = &c
		}
	}
	return out
}

// String returns the limit as "<limit>/<window>", "" when unset.
func (l Limit) String() string {
	if !l.IsSet() {
		return ""
	}
	return fmt.Sprintf("%d/%v", l.Limit, l.Window)
}

// History returns the history of the first rule matching dest, with its
// zero fields filled (history.Retention.WithDefaults), and ok true; ok
// is false when no rule matches or the one that does keeps no history.
// It does not allocate.
func (rs *Rules) History(dest string) (r history.Retention, ok bool) {
	i := rs.Index(dest)
	if i < 0 || rs.rules[i].History == nil {
		return history.Retention{}, false
	}
	return rs.rules[i].History.WithDefaults(), true
}
