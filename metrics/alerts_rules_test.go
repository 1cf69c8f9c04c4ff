package metrics

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The shipped alerts.yml and alerts_test.yml are checked here: promtool
// accepts the rules, their unit tests pass and cover every alert, and every
// rule has a severity and its annotations. queries_test.go checks the
// series the rules name.

// promtool returns the path of promtool, failing the test when it is not
// installed: the rules are part of the product and must be checked.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/promtool"); err == nil {
		return "/usr/bin/promtool"
	}
	t.Fatal("promtool not found in PATH or at /usr/bin/promtool: it comes with the Debian package " +
		"\"prometheus\" (apt-get install prometheus); run the project's test command, which installs it, " +
		"then go test ./metrics/")
	return ""
}

// runPromtool runs promtool in this package's directory and fails the test
// with promtool's output if it exits non-zero.
func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool(t), args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	out := runPromtool(t, "check", "rules", "alerts.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules alerts.yml: no SUCCESS in output:\n%s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	out := runPromtool(t, "test", "rules", "alerts_test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules alerts_test.yml: no SUCCESS in output:\n%s", out)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readAlerts(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	return f
}

func TestAlertRulesShape(t *testing.T) {
	t.Parallel()
	f := readAlerts(t)
	want := []string{
		"StompgateHighFrameDropRatio",
		"StompgateHandshakeRejectionSpike",
		"StompgateHandshakeLimiterFallback",
		"StompgateSlowConsumerDisconnects",
		"StompgateHandshakeLimiterSlow",
	}
	seen := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			seen[r.Alert] = true
			if r.Alert == "" {
				t.Errorf("group %s: a rule without alert name (expr %q)", g.Name, r.Expr)
			}
			switch r.Labels["severity"] {
			case "warning", "critical":
			default:
				t.Errorf("%s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("alerts.yml has no %s", w)
		}
	}
}

// alerts_test.yml must show every alert both firing and staying quiet.
func TestAlertUnitTestsCoverEveryAlert(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tf); err != nil {
		t.Fatalf("alerts_test.yml: %v", err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			if !fires[r.Alert] {
				t.Errorf("alerts_test.yml never expects %s to fire", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("alerts_test.yml never expects %s to stay quiet", r.Alert)
			}
		}
	}
}
