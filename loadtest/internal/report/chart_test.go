package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	h := NewHistogram()
	for ms := int64(1); ms <= 100; ms++ {
		RecordMicros(h, ms*1000)
	}
	got := Summarize(h)
	want := LatencySummary{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}
	// hdrhistogram reports bucket bounds: within 0.1% at 3 digits.
	close := func(a, b float64) bool { return a >= b && a <= b*1.001 }
	if got.Count != want.Count || !close(got.P50, want.P50) || !close(got.P90, want.P90) ||
		!close(got.P99, want.P99) || !close(got.Max, want.Max) {
		t.Errorf("summarize = %+v, want %+v (to 3 digits)", *got, want)
	}
	if s := Summarize(NewHistogram()); s != nil {
		t.Errorf("summarize(empty) = %+v, want nil", *s)
	}
}

func TestRecordMicrosClamps(t *testing.T) {
	h := NewHistogram()
	RecordMicros(h, -5)
	RecordMicros(h, histMaxMicros*10)
	if h.TotalCount() != 2 || h.Min() != histMinMicros || h.Max() < histMaxMicros {
		t.Errorf("count %d min %d max %d, want 2, %d, >= %d", h.TotalCount(), h.Min(), h.Max(), histMinMicros, histMaxMicros)
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(5, 0); got != 0 {
		t.Errorf("ratio(5, 0) = %v, want 0", got)
	}
	if got := Ratio(1, 4); got != 0.25 {
		t.Errorf("ratio(1, 4) = %v, want 0.25", got)
	}
	if got := PerMicros(2, 1_000_000); got != 2 {
		t.Errorf("perMicros(2s, 1e6) = %v, want 2", got)
	}
}

func TestChartIsXML(t *testing.T) {
	var b strings.Builder
	ss := []Series{
		{Name: "normal delivered/s", Values: []float64{325, 324, 326}},
		{Name: "normal sent/s", Style: StyleDashed, Values: []float64{325, 325, 325}},
		{Name: "abuser <delivered>/s", Values: []float64{200, 200, 200}},
	}
	if err := WriteChart(&b, "flood & friends", ss); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(b.String()))
	lines := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != len(ss) {
		t.Errorf("chart has %d polylines, want %d", lines, len(ss))
	}
	if got := niceCeil(326); got != 500 {
		t.Errorf("niceCeil(326) = %v, want 500", got)
	}
}

func TestProgressLines(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b bytes.Buffer
	p := NewProgress(&b, t0, false)
	p.line(t0.Add(time.Second), ProgressField{"attempts", 10}, ProgressField{"accepted", 6}, ProgressField{"429", 4})
	p.line(t0.Add(2*time.Second), ProgressField{"attempts", 20}, ProgressField{"accepted", 8}, ProgressField{"429", 12})
	p.End()
	want := "    1.0s  attempts 10  accepted 6  429 4\n    2.0s  attempts 20  accepted 8  429 12\n"
	if got := b.String(); got != want {
		t.Errorf("progress into a buffer:\n%q\nwant\n%q", got, want)
	}
	var quiet bytes.Buffer
	q := NewProgress(&quiet, t0, true)
	q.line(t0, ProgressField{"sent", 1})
	q.End()
	if quiet.Len() != 0 {
		t.Errorf("quiet progress wrote %q", quiet.String())
	}
}

func TestYAxis(t *testing.T) {
	tests := []struct {
		name    string
		series  [][]float64
		wantLog bool
		lo, hi  float64
	}{
		{"flood: 5000/s sent over 200/s delivered", [][]float64{{325, 326}, {5000, 5000}, {200, 200}, {4800, 4800}}, true, 100, 10000},
		{"alike", [][]float64{{325, 324}, {325, 326}}, false, 0, 500},
		{"a zero second does not make it log", [][]float64{{0, 300, 310}, {305, 300, 290}}, false, 0, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ax := newYAxis(tt.series)
			if ax.log != tt.wantLog || ax.lo != tt.lo || ax.hi != tt.hi {
				t.Errorf("newYAxis = %+v, want log %v from %v to %v", ax, tt.wantLog, tt.lo, tt.hi)
			}
		})
	}
	ax := yAxis{log: true, lo: 100, hi: 10000}
	if got, want := ax.y(0), float64(padTop+plotH); got != want {
		t.Errorf("log axis y(0) = %v, want the axis at %v", got, want)
	}
	if got, want := ax.y(1000), float64(padTop+plotH/2); got != want {
		t.Errorf("log axis y(1000) = %v, want the middle %v", got, want)
	}
}

// TestSeriesJSON checks that the chart's grouping stays out of the JSON
// report: a series there is its name and values.
func TestSeriesJSON(t *testing.T) {
	b, err := json.Marshal(Series{Name: "normal delivered", Values: []float64{1.5}, Group: "normal", Style: StyleDashed})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"name":"normal delivered","values":[1.5]}`; got != want {
		t.Errorf("json.Marshal(Series) = %s, want %s", got, want)
	}
}

// TestChartUnitAndMarks: the y axis says what it counts (the series'
// Unit, else a single series' name, never "count"), and each mark is a
// vertical line across the plot, labelled when it has a label, at its
// second of the run.
func TestChartUnitAndMarks(t *testing.T) {
	values := []float64{10, 12, 30, 31, 12, 11}
	for _, tt := range []struct {
		name string
		s    Series
		unit string
	}{
		{"unit given", Series{Name: "server RSS MiB", Unit: "server RSS (MiB)", Values: values}, "server RSS (MiB)"},
		{"one series", Series{Name: "server RSS MiB", Values: values}, "server RSS MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.Marks = []Mark{{At: 2, Label: "receipts"}, {At: 4}, {At: 4, Label: "tx-fill"}}
			var b strings.Builder
			if err := WriteChart(&b, "abuse", []Series{s}); err != nil {
				t.Fatal(err)
			}
			svg := b.String()
			if !strings.Contains(svg, ">"+tt.unit+"</text>") || strings.Contains(svg, ">count</text>") {
				t.Errorf("y axis not labelled %q:\n%s", tt.unit, svg)
			}
			for _, l := range []string{">receipts</text>", ">tx-fill</text>"} {
				if !strings.Contains(svg, l) {
					t.Errorf("no mark label %s", l)
				}
			}
			// Values cover seconds 1..6 at x(0)..x(5): second 2 is x(1),
			// second 4 is x(3).
			step := float64(plotW) / 5
			for _, at := range []float64{padLeft + step, padLeft + 3*step} {
				if want := fmt.Sprintf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888"`, at, padTop, at, padTop+plotH); !strings.Contains(svg, want) {
					t.Errorf("no mark line %s", want)
				}
			}
			if got := strings.Count(svg, `stroke="#888"`); got != 3 {
				t.Errorf("%d mark lines, want 3", got)
			}
		})
	}
}
