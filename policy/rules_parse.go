package policy

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stompgate/stompgate/history"
)

// ruleFields are the fields of one item of the destinations list.
var ruleFields = []string{"name", "pattern", "send", "commands", "client_send", "delivery",
	"max_subscribers", "principal", "history", "presence"}

// decodeRules reads the destinations list.
func decodeRules(n *yaml.Node) ([]Rule, error) {
	if n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, invalidf("line %d: destinations must be a list", n.Line)
	}
	if len(n.Content) > MaxRules {
		return nil, invalidf("line %d: destinations: %d rules, at most %d", n.Line, len(n.Content), MaxRules)
	}
	rules := make([]Rule, 0, len(n.Content))
	for i, item := range n.Content {
		r, err := decodeRule(resolve(item), i)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// decodeRule reads one rule; i is its index in the list, which names it
// in errors together with its name.
func decodeRule(n *yaml.Node, i int) (Rule, error) {
	where := fmt.Sprintf("destinations[%d]: ", i)
	if n.Kind == yaml.MappingNode {
		for k := 0; k+1 < len(n.Content); k += 2 {
			if v := resolve(n.Content[k+1]); n.Content[k].Value == "name" && v.Kind == yaml.ScalarNode {
				where = fmt.Sprintf("destinations[%d] %q: ", i, v.Value)
			}
		}
	}
	fs, err := fields(n, where, ruleFields...)
	if err != nil {
		return Rule{}, err
	}
	var r Rule
	if r.Name, err = scalar(fs["name"], where, "name"); err != nil {
		return Rule{}, err
	}
	if r.Pattern, err = scalar(fs["pattern"], where, "pattern"); err != nil {
		return Rule{}, err
	}
	if r.Delivery, err = scalar(fs["delivery"], where, "delivery"); err != nil {
		return Rule{}, err
	}
	if r.Send, err = decodeLimit(fs["send"], where, "send"); err != nil {
		return Rule{}, err
	}
	if r.Principal, err = decodeLimit(fs["principal"], where, "principal"); err != nil {
		return Rule{}, err
	}
	if r.MaxSubscribers, err = wholeNumber(fs["max_subscribers"], where, "max_subscribers"); err != nil {
		return Rule{}, err
	}
	if r.History, err = decodeHistory(fs["history"], where); err != nil {
		return Rule{}, err
	}
	if r.Presence, err = flag(fs["presence"], where, "presence"); err != nil {
		return Rule{}, err
	}
	if cn := fs["client_send"]; cn != nil && !isNull(cn) {
		var allowed bool
		if cn.Kind != yaml.ScalarNode || cn.ShortTag() != "!!bool" || cn.Decode(&allowed) != nil {
			return Rule{}, invalidf("line %d: %sclient_send: %q is not true or false", cn.Line, where, cn.Value)
		}
		r.ReadOnly = !allowed
	}
	if cn := fs["commands"]; cn != nil && !isNull(cn) {
		if cn.Kind != yaml.SequenceNode {
			return Rule{}, invalidf("line %d: %scommands: must be a list", cn.Line, where)
		}
		for _, c := range cn.Content {
			s, err := scalar(resolve(c), where, "commands")
			if err != nil {
				return Rule{}, err
			}
			r.Commands = append(r.Commands, s)
		}
	}
	return r, nil
}

// decodeLimit reads a {limit, window} mapping; absent or null is the
// unset Limit.
func decodeLimit(n *yaml.Node, where, name string) (Limit, error) {
	if n == nil || isNull(n) {
		return Limit{}, nil
	}
	fs, err := fields(n, where+name+": ", "limit", "window")
	if err != nil {
		return Limit{}, err
	}
	var l Limit
	if l.Limit, err = wholeNumber(fs["limit"], where, name+".limit"); err != nil {
		return Limit{}, err
	}
	if l.Limit == 0 {
		// An explicit 0 would read as "unset"; a limit of nothing is a
		// read-only destination, which client_send says.
		return Limit{}, invalidf("line %d: %s%s.limit: missing or 0; a rule that allows no SEND says client_send: false", n.Line, where, name)
	}
	if wn := fs["window"]; wn != nil && !isNull(wn) {
		s, err := scalar(wn, where, name+".window")
		if err != nil {
			return Limit{}, err
		}
		if l.Window, err = time.ParseDuration(s); err != nil {
			return Limit{}, invalidf("line %d: %s%s.window: %q is not a duration such as 1s or 500ms", wn.Line, where, name, s)
		}
		if l.Window == 0 {
			return Limit{}, invalidf("line %d: %s%s.window: 0 is not a window", wn.Line, where, name)
		}
	}
	return l.withDefaults(), nil
}

// decodeHistory reads a {keep, for} mapping; absent or null is nil (no
// history), an empty mapping the defaults (history.DefaultKeep for
// history.DefaultFor).
func decodeHistory(n *yaml.Node, where string) (*history.Retention, error) {
	if n == nil || isNull(n) {
		return nil, nil
	}
	fs, err := fields(n, where+"history: ", "keep", "for")
	if err != nil {
		return nil, err
	}
	var r history.Retention
	if r.Keep, err = wholeNumber(fs["keep"], where, "history.keep"); err != nil {
		return nil, err
	}
	if fn := fs["for"]; fn != nil && !isNull(fn) {
		s, err := scalar(fn, where, "history.for")
		if err != nil {
			return nil, err
		}
		if r.For, err = time.ParseDuration(s); err != nil {
			return nil, invalidf("line %d: %shistory.for: %q is not a duration such as 10m or 1h", fn.Line, where, s)
		}
		if r.For == 0 {
			return nil, invalidf("line %d: %shistory.for: 0 keeps nothing; leave history out instead", fn.Line, where)
		}
	}
	if fs["keep"] != nil && !isNull(fs["keep"]) && r.Keep == 0 {
		return nil, invalidf("line %d: %shistory.keep: 0 keeps nothing; leave history out instead", n.Line, where)
	}
	return &r, nil
}

// wholeNumber reads an integer field; absent or null is 0.
func wholeNumber(n *yaml.Node, where, name string) (int, error) {
	if n == nil || isNull(n) {
		return 0, nil
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, invalidf("line %d: %s%s: %s is not a whole number", n.Line, where, name, strconv.Quote(n.Value))
	}
	return v, nil
}
