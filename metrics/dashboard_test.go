package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The shipped dashboard.json is checked here: its shape, its data source
// variable, and that every query is PromQL that promtool parses.
// queries_test.go checks the series the queries name.

// Every dashboard query is valid PromQL: each one becomes a recording rule
// in a scratch file that promtool parses. Grafana's interval variables are
// replaced by a duration first; label variables sit inside strings and
// need no replacement.
func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, q := range d.queries() {
		expr := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h").Replace(q.expr)
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", len(rules)+1), Expr: expr})
	}
	if len(rules) == 0 {
		t.Fatal("dashboard.json has no queries")
	}
	file := map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatalf("yaml.Marshal: %v", err)
	}
	path := filepath.Join(t.TempDir(), "dashboard_rules.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, "check", "rules", path)
	if want := fmt.Sprintf("%d rules found", len(rules)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: output lacks %q:\n%s", want, out)
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardPanel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // inside collapsed rows
}

// query is one PromQL expression and where it came from.
type query struct {
	where string
	expr  string
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return d
}

// allPanels returns the panels, rows' nested panels included.
func (d dashboard) allPanels() []dashboardPanel {
	var out []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// queries returns the panel target expressions.
func (d dashboard) queries() []query {
	var qs []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, query{where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), expr: tg.Expr})
		}
	}
	return qs
}

// variableQueries returns the label_values queries of query variables.
func (d dashboard) variableQueries() []query {
	var qs []query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if json.Unmarshal(v.Query, &s) == nil {
				q.Query = s
			}
		}
		qs = append(qs, query{where: "variable " + v.Name, expr: q.Query})
	}
	return qs
}

func TestDashboardShape(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion = %d, want >= 36", d.SchemaVersion)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: want both set", d.Title, d.UID)
	}
	dsVar := ""
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			dsVar = v.Name
		}
	}
	if dsVar == "" {
		t.Fatal("no datasource variable with query \"prometheus\"")
	}
	wantUID := "${" + dsVar + "}"
	checkDS := func(where string, ds *datasourceRef) {
		if ds == nil || ds.Type != "prometheus" || ds.UID != wantUID {
			t.Errorf("%s: datasource %+v, want {prometheus %s}", where, ds, wantUID)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			checkDS("variable "+v.Name, v.Datasource)
		}
	}
	ids := map[int]string{}
	for _, p := range d.allPanels() {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		checkDS(fmt.Sprintf("panel %q", p.Title), p.Datasource)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			checkDS(fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), tg.Datasource)
		}
	}
}
