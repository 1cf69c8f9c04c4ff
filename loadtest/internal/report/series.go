// Package report is what loadtest prints: per-class statistics and
// latency percentiles, per-second series, SVG charts and the progress
// line on stderr.
package report

import (
	"strings"
	"time"
)

// Series is one time series of the run, for the chart and the JSON
// report. Values[i] covers step i+1 of the load period: second i+1
// unless Step says otherwise.
type Series struct {
	Name   string    `json:"name"`   // what is counted, and whose
	Values []float64 `json:"values"` // one per step
	// Step is the time each value covers; zero means a second. The
	// chart takes it from the first series.
	Step time.Duration `json:"-"`
	// Group and Style are for the chart: the series of one group (a
	// class's delivered, sent and undelivered) share a colour and differ
	// in style. An empty group is a group of its own.
	Group string    `json:"-"`
	Style LineStyle `json:"-"`
	// Unit is what the y axis counts ("server RSS, MiB"); the chart
	// takes it from the first series. Empty: "per second" when every
	// series is a rate (a "/s" in its name), else the one series' name.
	Unit string `json:"-"`
	// Marks are moments of the run drawn as vertical lines (the start of
	// each attack); the chart takes them from the first series.
	Marks []Mark `json:"-"`
}

// Mark is a moment of the run on the chart: At seconds since the run
// began, with a label (empty: the line alone, as at an attack's end).
type Mark struct {
	At    float64
	Label string
}

// LineStyle tells a group's series apart on the chart.
type LineStyle uint8

const (
	styleSolid  LineStyle = iota // what arrived
	StyleDashed                  // what was sent
	StyleDotted                  // what was lost
)

// CounterSeries turns a cumulative counter into per-second deltas.
type CounterSeries struct {
	Series *Series      // receives a value per Sample
	Read   func() int64 // the counter
	last   int64
}

func (c *CounterSeries) sample(dt time.Duration) {
	v := c.Read()
	rate := 0.0
	if dt > 0 {
		rate = float64(v-c.last) / dt.Seconds()
	}
	c.Series.Values = append(c.Series.Values, Round3(rate))
	c.last = v
}

// SeriesLabel names a class's series.
func SeriesLabel(what, class string) string {
	return strings.TrimSpace(class + " " + what)
}

// GaugeSeries records a level once a second (sessions open), not a rate.
type GaugeSeries struct {
	Series *Series        // receives a value per Sample
	Read   func() float64 // the level
}

func (g *GaugeSeries) sample(time.Duration) {
	g.Series.Values = append(g.Series.Values, Round3(g.Read()))
}

// LossSeries is the per-second rise of expected − delivered: what a
// class sent that did not arrive. A second that catches up on the
// previous one's in-flight messages counts 0, not a negative rate.
type LossSeries struct {
	Series *Series                            // receives a value per Sample
	Read   func() (expected, delivered int64) // the class's counters
	last   int64
}

func (l *LossSeries) sample(dt time.Duration) {
	e, d := l.Read()
	v := e - d
	rate := 0.0
	if dt > 0 && v > l.last {
		rate = float64(v-l.last) / dt.Seconds()
	}
	l.Series.Values = append(l.Series.Values, Round3(rate))
	l.last = v
}
