package scrape

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
)

// Usage reads the server's RSS and CPU time: from /proc when pid is
// set, else from process_resident_memory_bytes and
// process_cpu_seconds_total on the metrics page at url.
type Usage struct {
	PID int    // server process to read /proc of; 0 for none
	URL string // metrics page; "" for none
}

// Kind names the source for the report: "proc", "metrics" or "" (none).
func (u Usage) Kind() string {
	switch {
	case u.PID > 0:
		return "proc"
	case u.URL != "":
		return "metrics"
	}
	return ""
}

// RSS returns the server's resident set alone, and kind() as where it
// came from: a metrics page without CPU time still answers.
func (u Usage) RSS(ctx context.Context) (int64, string, error) {
	if u.PID > 0 {
		v, err := procstat.RSS(u.PID)
		return v, u.Kind(), err
	}
	if u.URL == "" {
		return 0, "", errors.New("no -pid and no metrics endpoint")
	}
	s, err := Fetch(ctx, u.URL)
	if err != nil {
		return 0, "", err
	}
	if !s.Has(MetricRSS) {
		return 0, "", fmt.Errorf("%s has no %s", u.URL, MetricRSS)
	}
	return int64(s.Sum(MetricRSS)), u.Kind(), nil
}

// Read returns one sample of both.
func (u Usage) Read(ctx context.Context) (rss int64, cpu time.Duration, err error) {
	if u.PID > 0 {
		if rss, err = procstat.RSS(u.PID); err != nil {
			return 0, 0, err
		}
		cpu, err = procstat.CPU(u.PID)
		return rss, cpu, err
	}
	s, err := Fetch(ctx, u.URL)
	if err != nil {
		return 0, 0, err
	}
	if !s.Has(MetricRSS) || !s.Has(MetricCPU) {
		return 0, 0, fmt.Errorf("%s has no %s or %s", u.URL, MetricRSS, MetricCPU)
	}
	return int64(s.Sum(MetricRSS)), time.Duration(s.Sum(MetricCPU) * float64(time.Second)), nil
}
