package main

import (
	"strings"
	"time"
)

// series is one per-second time series of the run, for the chart and the
// JSON report. Values[i] covers second i+1 of the load period.
type series struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	// group and style are for the chart: the series of one group (a
	// class's delivered, sent and undelivered) share a colour and differ
	// in style. An empty group is a group of its own.
	group string
	style lineStyle
}

// lineStyle tells a group's series apart on the chart.
type lineStyle uint8

const (
	styleSolid  lineStyle = iota // what arrived
	styleDashed                  // what was sent
	styleDotted                  // what was lost
)

// counterSeries turns a cumulative counter into per-second deltas.
type counterSeries struct {
	s    *series
	read func() int64
	last int64
}

func (c *counterSeries) sample(dt time.Duration) {
	v := c.read()
	rate := 0.0
	if dt > 0 {
		rate = float64(v-c.last) / dt.Seconds()
	}
	c.s.Values = append(c.s.Values, round3(rate))
	c.last = v
}

// seriesLabel names a class's series.
func seriesLabel(what, class string) string {
	return strings.TrimSpace(class + " " + what)
}

// gaugeSeries records a level once a second (sessions open), not a rate.
type gaugeSeries struct {
	s    *series
	read func() float64
}

func (g *gaugeSeries) sample(time.Duration) { g.s.Values = append(g.s.Values, round3(g.read())) }

// lossSeries is the per-second rise of expected − delivered: what a
// class sent that did not arrive. A second that catches up on the
// previous one's in-flight messages counts 0, not a negative rate.
type lossSeries struct {
	s    *series
	read func() (expected, delivered int64)
	last int64
}

func (l *lossSeries) sample(dt time.Duration) {
	e, d := l.read()
	v := e - d
	rate := 0.0
	if dt > 0 && v > l.last {
		rate = float64(v-l.last) / dt.Seconds()
	}
	l.s.Values = append(l.s.Values, round3(rate))
	l.last = v
}
