package main

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

// scrapeTimeout bounds one /metrics request.
const scrapeTimeout = 5 * time.Second

// maxScrapeBytes bounds the metrics page read: a server's page is tens of
// kilobytes.
const maxScrapeBytes = 16 << 20

// samples are the series of one scrape of a Prometheus text page, keyed by
// the series as written ("name{label=\"v\",...}"), values summed if a
// series repeats.
type samples map[string]float64

// scrape fetches and parses the metrics page at url.
func scrape(ctx context.Context, url string) (samples, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
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
func parseSamples(r io.Reader) (samples, error) {
	out := samples{}
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

// sum adds the series of metric name whose labels include every
// `label="value"` pair in match (none: every series of the metric).
func (s samples) sum(name string, match ...string) float64 {
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

// has reports whether any series of metric name is present.
func (s samples) has(name string) bool {
	for series := range s {
		if labels, ok := strings.CutPrefix(series, name); ok && (labels == "" || labels[0] == '{') {
			return true
		}
	}
	return false
}

// Frame counters of stompgate's /metrics.
const (
	metricReceived = "stompgate_frames_received_total"
	metricPassed   = "stompgate_frames_passed_total"
	metricDropped  = "stompgate_frames_dropped_total"
	metricRSS      = "process_resident_memory_bytes"
	metricCPU      = "process_cpu_seconds_total"
	metricHandshks = "stompgate_handshakes_total"
	labelSend      = `command="SEND"`
)

// frameCounts are the server's frame counters, all commands and SEND.
type frameCounts struct {
	Received     int64 `json:"received"`
	Passed       int64 `json:"passed"`
	Dropped      int64 `json:"dropped"`
	SendReceived int64 `json:"send_received"`
	SendPassed   int64 `json:"send_passed"`
	SendDropped  int64 `json:"send_dropped"`
}

func frameCountsOf(s samples) frameCounts {
	n := func(name string, match ...string) int64 { return int64(s.sum(name, match...)) }
	return frameCounts{
		Received:     n(metricReceived),
		Passed:       n(metricPassed),
		Dropped:      n(metricDropped),
		SendReceived: n(metricReceived, labelSend),
		SendPassed:   n(metricPassed, labelSend),
		SendDropped:  n(metricDropped, labelSend),
	}
}

func (a frameCounts) minus(b frameCounts) frameCounts {
	return frameCounts{
		Received:     a.Received - b.Received,
		Passed:       a.Passed - b.Passed,
		Dropped:      a.Dropped - b.Dropped,
		SendReceived: a.SendReceived - b.SendReceived,
		SendPassed:   a.SendPassed - b.SendPassed,
		SendDropped:  a.SendDropped - b.SendDropped,
	}
}

// balanced reports whether received = passed + dropped, in total and for
// SEND: every inbound frame accounted for exactly once.
func (a frameCounts) balanced() bool {
	return a.Received == a.Passed+a.Dropped && a.SendReceived == a.SendPassed+a.SendDropped
}
