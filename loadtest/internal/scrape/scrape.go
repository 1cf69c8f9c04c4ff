// Package scrape reads what a server reports about itself: the
// Prometheus text page of its metrics endpoint, and its RSS and CPU time
// from /proc or that page.
package scrape

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Timeout bounds one /metrics request.
const Timeout = 5 * time.Second

// maxScrapeBytes bounds the metrics page read: a server's page is tens of
// kilobytes.
const maxScrapeBytes = 16 << 20

// Samples are the series of one scrape of a Prometheus text page, keyed by
// the series as written ("name{label=\"v\",...}"), values summed if a
// series repeats.
type Samples map[string]float64

// Fetch fetches and parses the metrics page at url.
func Fetch(ctx context.Context, url string) (Samples, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseSamples(io.LimitReader(resp.Body, maxScrapeBytes))
}

// parseSamples reads the Prometheus text exposition format: comment
// lines are skipped, every other line is a series, a space, a value and
// an optional timestamp.
func parseSamples(r io.Reader) (Samples, error) {
	out := Samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// The series ends at the first space outside the braces.
		end := strings.IndexByte(line, ' ')
		if b := strings.IndexByte(line, '{'); b >= 0 && b < end {
			c := strings.LastIndexByte(line, '}')
			if c < 0 {
				return nil, fmt.Errorf("metrics: unterminated labels in %q", line)
			}
			end = c + 1
		}
		if end <= 0 || end >= len(line) {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		fields := strings.Fields(line[end:])
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: value of %q: %v", line, err)
		}
		out[line[:end]] += v
	}
	return out, sc.Err()
}

// Sum adds the series of metric name whose labels include every
// `label="value"` pair in match (none: every series of the metric).
func (s Samples) Sum(name string, match ...string) float64 {
	var total float64
	for series, v := range s {
		labels, ok := strings.CutPrefix(series, name)
		if !ok || (labels != "" && labels[0] != '{') {
			continue
		}
		all := true
		for _, m := range match {
			if !strings.Contains(labels, m) {
				all = false
				break
			}
		}
		if all {
			total += v
		}
	}
	return total
}

// Has reports whether any series of metric name is present.
func (s Samples) Has(name string) bool {
	for series := range s {
		if labels, ok := strings.CutPrefix(series, name); ok && (labels == "" || labels[0] == '{') {
			return true
		}
	}
	return false
}

// Series names of stompgate's /metrics and of any Go process's.
const (
	// MetricReceived counts inbound frames, by command.
	MetricReceived = "stompgate_frames_received_total"
	metricPassed   = "stompgate_frames_passed_total"
	metricDropped  = "stompgate_frames_dropped_total"
	// MetricRSS is the process's resident set, in bytes.
	MetricRSS = "process_resident_memory_bytes"
	// MetricCPU is the process's CPU time, in seconds.
	MetricCPU = "process_cpu_seconds_total"
	// MetricHandshakes counts WebSocket handshakes, by result.
	MetricHandshakes = "stompgate_handshakes_total"
	labelSend        = `command="SEND"`
)

// FrameCounts are the server's frame counters, all commands and SEND.
// Received = Passed + Dropped when the server accounts for every frame.
type FrameCounts struct {
	Received     int64 `json:"received"`      // frames in, every command
	Passed       int64 `json:"passed"`        // frames the chain let through
	Dropped      int64 `json:"dropped"`       // frames the chain dropped
	SendReceived int64 `json:"send_received"` // SEND frames in
	SendPassed   int64 `json:"send_passed"`   // SEND frames let through
	SendDropped  int64 `json:"send_dropped"`  // SEND frames dropped
}

// FrameCountsOf reads the frame counters out of s; absent ones are 0.
func FrameCountsOf(s Samples) FrameCounts {
	n := func(name string, match ...string) int64 { return int64(s.Sum(name, match...)) }
	return FrameCounts{
		Received:     n(MetricReceived),
		Passed:       n(metricPassed),
		Dropped:      n(metricDropped),
		SendReceived: n(MetricReceived, labelSend),
		SendPassed:   n(metricPassed, labelSend),
		SendDropped:  n(metricDropped, labelSend),
	}
}

// Minus returns a - b, counter by counter: what happened between two scrapes.
func (a FrameCounts) Minus(b FrameCounts) FrameCounts {
	return FrameCounts{
		Received:     a.Received - b.Received,
		Passed:       a.Passed - b.Passed,
		Dropped:      a.Dropped - b.Dropped,
		SendReceived: a.SendReceived - b.SendReceived,
		SendPassed:   a.SendPassed - b.SendPassed,
		SendDropped:  a.SendDropped - b.SendDropped,
	}
}

// Balanced reports whether received = passed + dropped, in total and for
// SEND: every inbound frame accounted for exactly once.
func (a FrameCounts) Balanced() bool {
	return a.Received == a.Passed+a.Dropped && a.SendReceived == a.SendPassed+a.SendDropped
}
