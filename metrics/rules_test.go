package metrics

import (
	"fmt"
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestRuleFramesDropped(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.SetRules([]string{"chat", "game"})
	m.RuleFramesDropped("chat", 3)
	m.RuleFramesDropped(outcome.RuleDefault, 2)
	m.RuleFramesDropped("unknown", 1) // not given to SetRules
	m.RuleFramesDropped("game", 0)
	m.SetRules([]string{"game"}) // chat removed: its series stays
	m.RuleFramesDropped("game", 4)
	m.PolicyReload(ReloadApplied)
	m.PolicyReload(ReloadResultOf(outcome.ReloadRefused))
	m.PolicyReload(ReloadResult(99))
	for _, tt := range []struct {
		name, label, value string
		want               float64
	}{
		{"stompgate_rule_frames_dropped_total", "rule", "chat", 3},
		{"stompgate_rule_frames_dropped_total", "rule", "game", 4},
		{"stompgate_rule_frames_dropped_total", "rule", "default", 2},
		{"stompgate_rule_frames_dropped_total", "rule", "other", 1},
		{"stompgate_policy_reloads_total", "result", "applied", 1},
		{"stompgate_policy_reloads_total", "result", "refused", 1},
		{"stompgate_policy_reloads_total", "result", "other", 1},
	} {
		if got := sample(t, reg, tt.name, tt.label, tt.value); got != tt.want {
			t.Errorf("%s{%s=%q} = %v, want %v", tt.name, tt.label, tt.value, got, tt.want)
		}
	}
	var nilM *Metrics
	nilM.SetRules([]string{"a"})
	nilM.RuleFramesDropped("a", 1)
	nilM.PolicyReload(ReloadApplied)
}

// TestRuleLabelsBounded renames rules on every reload: the series stop
// growing at MaxRuleLabels names, later ones are counted as other.
func TestRuleLabelsBounded(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	before := seriesCount(t, reg)
	for i := range MaxRuleLabels + 100 {
		name := fmt.Sprintf("r%d", i)
		m.SetRules([]string{name})
		m.RuleFramesDropped(name, 1)
	}
	// default was resolved at New, so MaxRuleLabels-1 names got series,
	// three each (drops, latest-value replacements, cap refusals).
	if got, want := seriesCount(t, reg)-before, 3*(MaxRuleLabels-1); got != want {
		t.Errorf("%d new series, want %d", got, want)
	}
	if got := sample(t, reg, "stompgate_rule_frames_dropped_total", "rule", "other"); got != 101 {
		t.Errorf("other = %v, want 101", got)
	}
}
