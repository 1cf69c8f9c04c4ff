package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTracingCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	st := TracingStats{Exported: 40, Failed: 3, Dropped: 7, Capped: 11}
	reg.MustRegister(NewTracingCollector(func() TracingStats { return st }))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_trace_spans_total", []string{"result", "exported"}, 40},
		{"stompgate_trace_spans_total", []string{"result", "failed"}, 3},
		{"stompgate_trace_spans_total", []string{"result", "dropped"}, 7},
		{"stompgate_traces_capped_total", nil, 11},
	} {
		if got := sample(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := seriesCount(t, reg); n != 4 {
		t.Errorf("%d series, want 4", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
