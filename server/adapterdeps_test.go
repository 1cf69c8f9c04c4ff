package server

import (
	"slices"
	"strings"
	"testing"
)

// adapterPackages plug Redis, JWTs, Prometheus and the HTTP API into the
// core, and policy feeds the binary and the nginx renderer. Each may build
// on the core, on the leaves they share (clientip, internal/...) and on
// the world outside, never on another adapter: what two adapters need
// alike gets a package of its own, so that each can be read, tested and
// replaced alone.
var adapterPackages = []string{
	module + "api",
	module + "appstream",
	module + "handshake",
	module + "history/streams",
	module + "jwtauth",
	module + "metrics",
	module + "policy",
	module + "presence/redisstore",
	module + "principallimit",
	module + "reconnect",
	module + "relay",
	module + "sessioncap",
	module + "tracing",
}

// siblingPaths returns, for each adapter that depends on another one,
// directly or through other packages, the chain of imports that leads
// there ("a -> b -> c"); graph maps a package to what it imports.
func siblingPaths(graph map[string][]string, adapters []string) []string {
	var out []string
	for _, from := range adapters {
		// Breadth first, so that the chain named is a shortest one.
		prev := map[string]string{from: ""}
		queue := []string{from}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if p != from && slices.Contains(adapters, p) {
				chain := []string{p}
				for q := prev[p]; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				out = append(out, strings.Join(chain, " -> "))
				continue // one finding per sibling; do not walk through it
			}
			for _, imp := range graph[p] {
				if _, seen := prev[imp]; !seen {
					prev[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestAdaptersImportNoSibling lists what the adapters build on (go list
// -deps, tests excluded) and fails when one of them reaches another,
// naming the imports that lead there.
func TestAdaptersImportNoSibling(t *testing.T) {
	t.Parallel()
	graph := listDeps(t, adapterPackages)
	if paths := siblingPaths(graph, adapterPackages); len(paths) > 0 {
		t.Errorf("adapters depend on other adapters; move what they share into a package of its own:\n\t%s",
			strings.Join(paths, "\n\t"))
	}
}

func TestSiblingPaths(t *testing.T) {
	t.Parallel()
	adapters := []string{"a", "b", "c"}
	for _, tt := range []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{name: "shared leaf", graph: map[string][]string{"a": {"core", "leaf"}, "b": {"leaf"}, "leaf": {"core"}}},
		{name: "direct", graph: map[string][]string{"a": {"core", "b"}}, want: []string{"a -> b"}},
		{name: "through a leaf", graph: map[string][]string{"a": {"leaf"}, "leaf": {"c"}}, want: []string{"a -> leaf -> c"}},
		{name: "shortest chain", graph: map[string][]string{"a": {"x", "c"}, "x": {"c"}}, want: []string{"a -> c"}},
		{name: "each pair once", graph: map[string][]string{"a": {"b"}, "b": {"c"}}, want: []string{"a -> b", "b -> c"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := siblingPaths(tt.graph, adapters); !slices.Equal(got, tt.want) {
				t.Errorf("siblingPaths = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMetricsImportsOnlyOutcome holds metrics to the outcome leaf for
// every label it counts by: it builds on no product package but outcome
// (and the module's internal helpers), so that a label is defined once,
// where the value is, and metrics never drifts from it.
func TestMetricsImportsOnlyOutcome(t *testing.T) {
	t.Parallel()
	graph := listDeps(t, []string{module + "metrics"})
	for p := range graph {
		if !strings.HasPrefix(p, module) || strings.HasPrefix(p, module+"internal/") {
			continue
		}
		if p != module+"metrics" && p != module+"outcome" {
			t.Errorf("metrics depends on %s; labels belong in package outcome", p)
		}
	}
}
