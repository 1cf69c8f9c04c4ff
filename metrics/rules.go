package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// MaxRuleLabels is the most distinct rule names
// stompgate_rule_frames_dropped_total keeps apart over the life of the
// process; later names are counted as "other". A policy holds at most
// 256 rules (policy.MaxRules); the room above that absorbs reloads that
// rename rules, and the bound holds however often that happens.
const MaxRuleLabels = 1024

// ReloadResult is the result label of stompgate_policy_reloads_total.
type ReloadResult uint8

// The results of a policy reload. A value outside this list is counted
// as "other".
const (
	// ReloadOther is a result this package does not name.
	ReloadOther ReloadResult = iota
	// ReloadApplied: the new destination rules are in force.
	ReloadApplied
	// ReloadRefused: the file was unreadable or invalid; the old rules
	// stay.
	ReloadRefused
)

var reloadResultLabels = append([]string{labelOther}, outcome.ReloadResults()...)

// ReloadResultOf returns the ReloadResult of outcome.ReloadApplied or
// outcome.ReloadRefused; anything else is ReloadOther.
func ReloadResultOf(result string) ReloadResult {
	return enumOf[ReloadResult](reloadResultLabels, result)
}

// String returns the label value r is counted under.
func (r ReloadResult) String() string { return labelOf(reloadResultLabels, r) }

// ruleMetrics are the destination rules' collectors. The rule label's
// values are the rule names of the policy, resolved by SetRules when the
// policy is loaded or reloaded, not per frame or per message.
type ruleMetrics struct {
	dropped    *prometheus.CounterVec
	replaced   *prometheus.CounterVec
	capRefused *prometheus.CounterVec
	// byName maps each resolved rule name to its counters; replaced
	// whole (copy on write) by SetRules, read without a lock.
	byName  atomic.Pointer[map[string]*ruleCounters]
	mu      sync.Mutex // serialises SetRules' copies of byName
	other   *ruleCounters
	reloads []prometheus.Counter
}

// ruleCounters are one rule name's series.
type ruleCounters struct {
	dropped, replaced, capRefused prometheus.Counter
}

// counters resolves the series of rule name.
func (r *ruleMetrics) counters(name string) *ruleCounters {
	return &ruleCounters{
		dropped:    r.dropped.WithLabelValues(name),
		replaced:   r.replaced.WithLabelValues(name),
		capRefused: r.capRefused.WithLabelValues(name),
	}
}

// of returns the counters of rule: its own when SetRules resolved it,
// else "other"'s.
func (r *ruleMetrics) of(rule string) *ruleCounters {
	if c, ok := (*r.byName.Load())[rule]; ok {
		return c
	}
	return r.other
}

func (m *Metrics) buildRules(b *builder) {
	m.rules.dropped = b.counterVec("stompgate_rule_frames_dropped_total",
		"Inbound frames the session limiter stopped (over a limit, or a SEND to a read-only destination), by the destination rule that applied: its name, default when none did.",
		"rule")
	m.rules.replaced = b.counterVec("stompgate_latest_replaced_total",
		"MESSAGEs of latest-value destinations that replaced one still waiting for its subscriber, which never got the older one, by rule.", "rule")
	m.rules.capRefused = b.counterVec("stompgate_subscriber_cap_refusals_total",
		"SUBSCRIBEs refused (ERROR and close) because the destination had its rule's most subscribers, by rule.", "rule")
	byName := map[string]*ruleCounters{outcome.RuleDefault: m.rules.counters(outcome.RuleDefault)}
	m.rules.byName.Store(&byName)
	m.rules.other = m.rules.counters(outcome.RuleOther)
	reloads := b.counterVec("stompgate_policy_reloads_total",
		"Re-readings of the policy file on SIGHUP, by result: applied (new destination rules in force) or refused (unreadable or invalid; the old rules stay).",
		"result")
	m.rules.reloads = resolveAll(reloadResultLabels, reloads.WithLabelValues)
}

// SetRules resolves the counters of the named destination rules, so
// that the per-rule counts find them without building a series per
// frame. Names resolved earlier keep their series (a reload that removes
// a rule does not reset what it counted); past MaxRuleLabels names in
// total, further names are counted as "other". Safe for concurrent use.
func (m *Metrics) SetRules(names []string) {
	if m == nil {
		return
	}
	m.rules.mu.Lock()
	defer m.rules.mu.Unlock()
	old := *m.rules.byName.Load()
	next := make(map[string]*ruleCounters, len(old)+len(names))
	for k, v := range old {
		next[k] = v
	}
	for _, n := range names {
		if _, ok := next[n]; ok || len(next) >= MaxRuleLabels || n == outcome.RuleOther {
			continue
		}
		next[n] = m.rules.counters(n)
	}
	m.rules.byName.Store(&next)
}

// RuleFramesDropped counts n frames the session limiter stopped under
// rule (stompgate_rule_frames_dropped_total{rule}): a name given to
// SetRules, or outcome.RuleDefault; anything else is counted as "other".
func (m *Metrics) RuleFramesDropped(rule string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.rules.of(rule).dropped.Add(float64(n))
}

// PolicyReload counts one re-reading of the policy file
// (stompgate_policy_reloads_total{result}).
func (m *Metrics) PolicyReload(r ReloadResult) {
	if m == nil {
		return
	}
	m.rules.reloads[known(reloadResultLabels, r)].Inc()
}

// LatestReplaced counts a latest-value MESSAGE that replaced a waiting
// one (stompgate_latest_replaced_total{rule}); a rule SetRules did not
// name is counted as "other".
func (m *Metrics) LatestReplaced(rule string) {
	if m == nil {
		return
	}
	m.rules.of(rule).replaced.Inc()
}

// SubscriberCapRefused counts a SUBSCRIBE refused at its destination's
// cap (stompgate_subscriber_cap_refusals_total{rule}); a rule SetRules
// did not name is counted as "other".
func (m *Metrics) SubscriberCapRefused(rule string) {
	if m == nil {
		return
	}
	m.rules.of(rule).capRefused.Inc()
}
