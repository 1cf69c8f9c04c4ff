package metrics

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stompgate/stompgate/outcome"
)

// Every series that alerts.yml and dashboard.json name must be one that
// Metrics registers, with labels and label values it can produce. A
// tokenizer for the small part of PromQL the files use finds them; promtool
// checks the syntax.

// family is what a registered metric family allows in a query.
type family struct {
	typ    dto.MetricType
	values map[string]map[string]bool // label name -> values Metrics produces
}

// registeredFamilies builds a Metrics, touches every method, and returns
// the families it exposes by name.
func registeredFamilies(t *testing.T) map[string]family {
	t.Helper()
	m, reg := newTestMetrics(t, Config{DestinationPrefixes: []string{"/topic/room."}})
	m.SessionOpened()
	m.SessionClosed(outcome.CloseNormal)
	m.Panic()
	m.Handshake(outcome.HandshakeAccepted)
	m.LimiterDecision("redis", time.Millisecond)
	m.LimiterStoreError("redis")
	m.SetLimiterFallback(true)
	m.FrameReceived("SEND")
	m.FramePassed("SEND")
	m.FrameDropped("SEND", DropRateLimit)
	m.ProtocolErrorClose("malformed")
	m.Delivered("/topic/room.1", 1)
	m.SlowConsumerDisconnect()
	m.AdmissionRefused(AdmissionMemory)
	reg.MustRegister(NewAdmissionCollector(func() AdmissionStats { return AdmissionStats{Refusing: "memory"} }))
	reg.MustRegister(NewHistoryCollector(func() HistoryStats { return HistoryStats{} }))
	reg.MustRegister(NewTracingCollector(func() TracingStats { return TracingStats{} }))

	fams := map[string]family{}
	for name, mf := range gather(t, reg) {
		f := family{typ: mf.GetType(), values: map[string]map[string]bool{}}
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				if f.values[lp.GetName()] == nil {
					f.values[lp.GetName()] = map[string]bool{}
				}
				f.values[lp.GetName()][lp.GetValue()] = true
			}
		}
		fams[name] = f
	}
	return fams
}

// targetLabels are attached by the Prometheus scrape, not by Metrics.
var targetLabels = map[string]bool{"job": true, "instance": true}

var (
	seriesNameRE = regexp.MustCompile(`stompgate_[a-z0-9_]+`)
	groupingRE   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	literalAltRE = regexp.MustCompile(`^[A-Za-z0-9_./]+$`)
)

// matcher is one label matcher of a selector, value unquoted but with
// escapes left as written.
type matcher struct {
	label, op, value string
}

// selector is a series name and its label matchers.
type selector struct {
	name     string
	matchers []matcher
}

// parseSelectors finds every stompgate_ series name in expr and the label
// matchers in braces right after it. It is a tokenizer for the small part
// of PromQL the shipped files use, not a PromQL parser: promtool checks
// the syntax.
func parseSelectors(expr string) ([]selector, error) {
	var sels []selector
	for _, loc := range seriesNameRE.FindAllStringIndex(expr, -1) {
		if loc[0] > 0 && isIdentByte(expr[loc[0]-1]) {
			continue // part of a longer identifier, such as a recording rule name
		}
		s := selector{name: expr[loc[0]:loc[1]]}
		rest := expr[loc[1]:]
		if strings.HasPrefix(rest, "{") {
			ms, err := parseMatchers(rest[1:])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			s.matchers = ms
		}
		sels = append(sels, s)
	}
	return sels, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseMatchers reads `label op "value", ...}` from s.
func parseMatchers(s string) ([]matcher, error) {
	var ms []matcher
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == ',' || s[i] == '\n' || s[i] == '\t') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated matcher list")
		}
		if s[i] == '}' {
			return ms, nil
		}
		start := i
		for i < len(s) && isIdentByte(s[i]) {
			i++
		}
		label := s[start:i]
		if label == "" {
			return nil, fmt.Errorf("label name expected at %q", s[start:])
		}
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var op string
		for _, o := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s[i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			return nil, fmt.Errorf("matcher operator expected after %q", label)
		}
		i += len(op)
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '"' {
			return nil, fmt.Errorf("quoted value expected after %s%s", label, op)
		}
		i++
		vstart := i
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated value for %s", label)
		}
		ms = append(ms, matcher{label: label, op: op, value: s[vstart:i]})
		i++
	}
}

func TestParseSelectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		want string // selectors rendered as name{label op value;...}|...
		err  bool
	}{
		{"bare", "stompgate_sessions_active", "stompgate_sessions_active{}", false},
		{"matchers", `rate(stompgate_x_total{a="1", b=~"x|y"}[5m])`, "stompgate_x_total{a=1;b=~x|y}", false},
		{"two", `stompgate_a / stompgate_b{c!="d"}`, "stompgate_a{}|stompgate_b{c!=d}", false},
		{"escaped quote", `stompgate_a{c="x\"y"}`, `stompgate_a{c=x\"y}`, false},
		{"inside identifier", `dashboard:stompgate_a`, "", false},
		{"unterminated", `stompgate_a{c="x`, "", true},
		{"no operator", `stompgate_a{c "x"}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sels, err := parseSelectors(tt.expr)
			if (err != nil) != tt.err {
				t.Fatalf("parseSelectors(%q) error %v, want error %v", tt.expr, err, tt.err)
			}
			var parts []string
			for _, s := range sels {
				var ms []string
				for _, m := range s.matchers {
					ms = append(ms, m.label+m.op+m.value)
				}
				parts = append(parts, s.name+"{"+strings.Join(ms, ";")+"}")
			}
			if got := strings.Join(parts, "|"); got != tt.want {
				t.Errorf("parseSelectors(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

// reporter is the part of testing.T that checkQuery reports to, so that a
// test can count the problems it finds in a deliberately broken query.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder counts reported problems instead of failing a test.
type recorder struct {
	*testing.T
	n int
}

func (r *recorder) Errorf(string, ...any) { r.n++ }

// checkQuery reports every series, label or label value in q that Metrics
// does not produce, and returns the families q uses.
func checkQuery(t reporter, fams map[string]family, q query) []string {
	t.Helper()
	sels, err := parseSelectors(q.expr)
	if err != nil {
		t.Errorf("%s: %v", q.where, err)
		return nil
	}
	if len(sels) == 0 {
		t.Errorf("%s: names no stompgate_ series: %s", q.where, q.expr)
	}
	var used []string
	labelsInScope := map[string]bool{"le": true}
	for l := range targetLabels {
		labelsInScope[l] = true
	}
	for _, s := range sels {
		base, f, ok := resolveFamily(fams, s.name)
		if !ok {
			t.Errorf("%s: series %s is not registered by Metrics", q.where, s.name)
			continue
		}
		used = append(used, base)
		for l := range f.values {
			labelsInScope[l] = true
		}
		for _, m := range s.matchers {
			switch {
			case targetLabels[m.label]:
				continue
			case m.label == "le" && strings.HasSuffix(s.name, "_bucket"):
				continue
			}
			values, ok := f.values[m.label]
			if !ok {
				t.Errorf("%s: %s has no label %q", q.where, s.name, m.label)
				continue
			}
			if strings.Contains(m.value, "$") {
				continue // a dashboard variable
			}
			alts := []string{m.value}
			if m.op == "=~" || m.op == "!~" {
				alts = strings.Split(m.value, "|")
			}
			for _, v := range alts {
				if (m.op == "=" || m.op == "!=" || literalAltRE.MatchString(v)) && !values[v] {
					t.Errorf("%s: %s{%s%s%q}: Metrics never produces %s=%q", q.where, s.name, m.label, m.op, m.value, m.label, v)
				}
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(q.expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !labelsInScope[l] {
				t.Errorf("%s: groups by %q, a label none of its series has", q.where, l)
			}
		}
	}
	return used
}

// resolveFamily maps a series name to its family, accepting the _bucket,
// _count and _sum series of a histogram.
func resolveFamily(fams map[string]family, name string) (string, family, bool) {
	if f, ok := fams[name]; ok {
		return name, f, true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := fams[base]; ok && f.typ == dto.MetricType_HISTOGRAM {
			return base, f, true
		}
	}
	return "", family{}, false
}

func TestAlertQueriesUseRegisteredSeries(t *testing.T) {
	t.Parallel()
	fams := registeredFamilies(t)
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			checkQuery(t, fams, query{where: "alert " + r.Alert, expr: r.Expr})
		}
	}
}

// Every dashboard query names registered series only, and every registered
// family appears on the dashboard.
func TestDashboardQueriesUseRegisteredSeries(t *testing.T) {
	t.Parallel()
	fams := registeredFamilies(t)
	d := readDashboard(t)
	shown := map[string]bool{}
	for _, q := range append(d.queries(), d.variableQueries()...) {
		for _, name := range checkQuery(t, fams, q) {
			shown[name] = true
		}
	}
	for name := range fams {
		if !shown[name] {
			t.Errorf("dashboard.json shows no panel for %s", name)
		}
	}
}

// The series check must fail on a misspelt series, label or value.
func TestCheckQueryCatchesMistakes(t *testing.T) {
	t.Parallel()
	fams := registeredFamilies(t)
	tests := []struct {
		name string
		expr string
	}{
		{"unknown series", "rate(stompgate_frames_droped_total[5m])"},
		{"unknown label", `stompgate_frames_dropped_total{reasn="rate_limit"}`},
		{"unknown value", `stompgate_frames_dropped_total{reason="ratelimit"}`},
		{"unknown regex alternative", `stompgate_handshakes_total{result=~"accepted|rejected_limt"}`},
		{"bucket of a counter", `stompgate_handshakes_total_bucket`},
		{"grouping by a missing label", `sum by (store) (stompgate_frames_passed_total)`},
		{"no stompgate series", `up`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if errs := queryProblems(t, fams, tt.expr); errs == 0 {
				t.Errorf("checkQuery(%q) found no problem, want one", tt.expr)
			}
		})
	}
	if n := queryProblems(t, fams, `sum by (job, reason) (rate(stompgate_frames_dropped_total{reason=~"rate_limit|rejected", job=~"$job"}[5m]))`); n != 0 {
		t.Errorf("checkQuery on a correct query found %d problems, want 0", n)
	}
}

// queryProblems returns how many problems checkQuery reports for expr.
func queryProblems(t *testing.T, fams map[string]family, expr string) int {
	t.Helper()
	r := &recorder{T: t}
	checkQuery(r, fams, query{where: "test", expr: expr})
	return r.n
}
