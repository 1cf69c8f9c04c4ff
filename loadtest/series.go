package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// series is one per-second time series of the run, for the chart and the
// JSON report. Values[i] covers second i+1 of the load period.
type series struct {
	Name   string    `json:"name"`
	Dashed bool      `json:"-"`
	Values []float64 `json:"values"`
}

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

// progress prints the live progress line, \r-overwritten, once a second.
type progress struct {
	w     io.Writer
	start time.Time
	wrote bool
}

// line prints one progress line.
func (p *progress) line(now time.Time, sent, delivered, drops, errs int64, extra string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\r%7.1fs  sent %d  delivered %d  drops %d  errors %d%s   ",
		now.Sub(p.start).Seconds(), sent, delivered, drops, errs, extra)
	p.wrote = true
}

// end finishes the line so the report starts on a fresh one.
func (p *progress) end() {
	if p.w != nil && p.wrote {
		fmt.Fprintln(p.w)
	}
}

// seriesLabel names a class's series.
func seriesLabel(what, class string) string {
	return strings.TrimSpace(class + " " + what)
}
