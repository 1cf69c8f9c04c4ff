package metrics

import (
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxRules bounds Config.Rules: each rule name is one series of each
// per-rule metric.
const MaxRules = 256

// destinationMetrics count what the per-destination rules do
// (server.DestinationOptions), by rule: rules[name] indexes replaced and
// capRefused, whose last entry counts "other".
type destinationMetrics struct {
	rules      map[string]int
	replaced   []prometheus.Counter
	capRefused []prometheus.Counter
}

// checkRules validates Config.Rules.
func checkRules(rules []string) error {
	if n := len(rules); n > MaxRules {
		return configErrorf("Rules has %d entries, more than the maximum %d", n, MaxRules)
	}
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		switch {
		case r == "":
			return configErrorf("Rules[%d] is empty", i)
		case !utf8.ValidString(r):
			return configErrorf("Rules[%d] %q is not valid UTF-8", i, r)
		case r == labelOther:
			return configErrorf("Rules[%d] %q is reserved for rules not known at start", i, r)
		}
		if j, dup := seen[r]; dup {
			return configErrorf("Rules[%d] %q repeats Rules[%d]", i, r, j)
		}
		seen[r] = i
	}
	return nil
}

func (m *Metrics) buildDestinations(b *builder, rules []string) {
	replaced := b.counterVec("stompgate_latest_replaced_total",
		"MESSAGEs of latest-value destinations that replaced one still waiting for its subscriber, which never got the older one, by rule.", "rule")
	refused := b.counterVec("stompgate_subscriber_cap_refusals_total",
		"SUBSCRIBEs refused (ERROR and close) because the destination had its rule's most subscribers on this instance, by rule.", "rule")
	values := append(append(make([]string, 0, len(rules)+1), rules...), labelOther)
	d := &m.dest
	d.rules = make(map[string]int, len(rules))
	for i, r := range rules {
		d.rules[r] = i
	}
	d.replaced = resolveAll(values, replaced.WithLabelValues)
	d.capRefused = resolveAll(values, refused.WithLabelValues)
}

// ruleIndex is the index of rule's counters: its own when Config.Rules
// names it, else "other"'s.
func (d *destinationMetrics) ruleIndex(rule string) int {
	if i, ok := d.rules[rule]; ok {
		return i
	}
	return len(d.replaced) - 1
}

// LatestReplaced counts a latest-value MESSAGE that replaced a waiting
// one (stompgate_latest_replaced_total{rule}); a rule Config.Rules does
// not name is counted as "other".
func (m *Metrics) LatestReplaced(rule string) {
	if m == nil {
		return
	}
	m.dest.replaced[m.dest.ruleIndex(rule)].Inc()
}

// SubscriberCapRefused counts a SUBSCRIBE refused at its destination's
// cap (stompgate_subscriber_cap_refusals_total{rule}); a rule
// Config.Rules does not name is counted as "other".
func (m *Metrics) SubscriberCapRefused(rule string) {
	if m == nil {
		return
	}
	m.dest.capRefused[m.dest.ruleIndex(rule)].Inc()
}
