package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// serverReport is what the server says about itself over the run: its
// frame counters from /metrics and its CPU time.
type serverReport struct {
	MetricsURL string `json:"metrics_url,omitempty"`
	// MetricsAvailable is false when the page could not be scraped or
	// holds no stompgate frame counters (a server other than wsserver);
	// MetricsNote says why.
	MetricsAvailable bool   `json:"metrics_available"`
	MetricsNote      string `json:"metrics_note,omitempty"`
	// Frames is the change of the frame counters over the run; Balanced
	// says whether received = passed + dropped held, in total and for
	// SEND.
	Before   *scrape.FrameCounts `json:"before,omitempty"`
	After    *scrape.FrameCounts `json:"after,omitempty"`
	Frames   *scrape.FrameCounts `json:"frames,omitempty"`
	Balanced *bool               `json:"balanced,omitempty"`

	// CPUSource is "proc" (-pid, /proc/<pid>/stat), "metrics"
	// (process_cpu_seconds_total) or empty when not measured.
	CPUSource  string  `json:"cpu_source,omitempty"`
	PID        int     `json:"pid,omitempty"`
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	// CPUPerDeliveredMicros is the server's CPU over the run divided by
	// the MESSAGE frames the tool read; CPUPerSentMicros by the SEND
	// frames it wrote.
	CPUPerDeliveredMicros float64 `json:"cpu_per_delivered_us,omitempty"`
	CPUPerSentMicros      float64 `json:"cpu_per_sent_us,omitempty"`

	// RSSBytes is the server's resident set at the end of the run, every
	// session still open, from /proc/<pid>/status (RSSSource "proc") or
	// process_resident_memory_bytes ("metrics"); absent when neither
	// was available.
	RSSSource string `json:"rss_source,omitempty"`
	RSSBytes  int64  `json:"rss_bytes,omitempty"`
}

// serverProbe takes the server's counters before a run and after.
type serverProbe struct {
	cfg      *Common
	URL      string
	before   scrape.Samples
	scrapeOK bool
	note     string
	cpu0     time.Duration
	cpuOK    bool
}

func newServerProbe(ctx context.Context, cfg *Common) *serverProbe {
	p := &serverProbe{cfg: cfg, URL: cfg.MetricsEndpoint()}
	if p.URL == "" {
		p.note = "scraping turned off (-metrics-url off)"
	} else if s, err := scrape.Fetch(ctx, p.URL); err != nil {
		p.note = fmt.Sprintf("no /metrics: %v", err)
	} else if !s.Has(scrape.MetricReceived) {
		p.note = "the metrics page has no " + scrape.MetricReceived + " (not a stompgate server)"
		p.before = s
	} else {
		p.before, p.scrapeOK = s, true
	}
	if cfg.PID > 0 {
		if c, err := procstat.CPU(cfg.PID); err == nil {
			p.cpu0, p.cpuOK = c, true
		}
	}
	return p
}

// finish scrapes again and builds the report.
func (p *serverProbe) finish(ctx context.Context) *serverReport {
	r := &serverReport{MetricsURL: p.URL, MetricsNote: p.note}
	var after scrape.Samples
	if p.URL != "" && p.before != nil {
		s, err := scrape.Fetch(ctx, p.URL)
		if err != nil {
			r.MetricsNote = fmt.Sprintf("second scrape failed: %v", err)
		}
		after = s
	}
	if p.scrapeOK && after != nil {
		b, a := scrape.FrameCountsOf(p.before), scrape.FrameCountsOf(after)
		d := a.Minus(b)
		ok := d.Balanced()
		r.MetricsAvailable = true
		r.Before, r.After, r.Frames, r.Balanced = &b, &a, &d, &ok
	}
	switch {
	case p.cpuOK:
		if c, err := procstat.CPU(p.cfg.PID); err == nil {
			r.CPUSource, r.PID = "proc", p.cfg.PID
			r.CPUSeconds = report.Round3((c - p.cpu0).Seconds())
		}
	case p.before != nil && after != nil && p.before.Has(scrape.MetricCPU):
		r.CPUSource = "metrics"
		r.CPUSeconds = report.Round3(after.Sum(scrape.MetricCPU) - p.before.Sum(scrape.MetricCPU))
	}
	switch {
	case p.cfg.PID > 0:
		if v, err := procstat.RSS(p.cfg.PID); err == nil {
			r.RSSSource, r.RSSBytes, r.PID = "proc", v, p.cfg.PID
		}
	case after != nil && after.Has(scrape.MetricRSS):
		r.RSSSource, r.RSSBytes = "metrics", int64(after.Sum(scrape.MetricRSS))
	}
	return r
}
