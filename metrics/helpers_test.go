package metrics

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// newTestMetrics builds a Metrics on a fresh registry.
func newTestMetrics(t testing.TB, cfg Config) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, reg
}

// gather returns the registry's families by name.
func gather(t testing.TB, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	byName := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// sample returns the value of the series name{labels}, given as
// alternating label names and values: the counter or gauge value, or a
// histogram's sample count. It fails the test if the series is missing.
func sample(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	want := labelKey(labels...)
	mf, ok := gather(t, g)[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
	for _, m := range mf.GetMetric() {
		var kv []string
		for _, lp := range m.GetLabel() {
			kv = append(kv, lp.GetName(), lp.GetValue())
		}
		if labelKey(kv...) != want {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no series %s{%s}", name, want)
	return 0
}

// labelKey renders alternating names and values as a sorted a="x",b="y".
func labelKey(kv ...string) string {
	pairs := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, kv[i]+"="+`"`+kv[i+1]+`"`)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

// seriesCount is the number of series the registry exposes.
func seriesCount(t testing.TB, g prometheus.Gatherer) int {
	t.Helper()
	n := 0
	for _, mf := range gather(t, g) {
		n += len(mf.GetMetric())
	}
	return n
}
