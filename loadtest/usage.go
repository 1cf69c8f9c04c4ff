package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
)

// usageSource reads the server's RSS and CPU time: from /proc when pid is
// set, else from process_resident_memory_bytes and
// process_cpu_seconds_total on the metrics page at url.
type usageSource struct {
	pid int
	url string
}

// kind names the source for the report: "proc", "metrics" or "" (none).
func (u usageSource) kind() string {
	switch {
	case u.pid > 0:
		return "proc"
	case u.url != "":
		return "metrics"
	}
	return ""
}

// rss returns the server's resident set alone, and kind() as where it
// came from: a metrics page without CPU time still answers.
func (u usageSource) rss(ctx context.Context) (int64, string, error) {
	if u.pid > 0 {
		v, err := procstat.RSS(u.pid)
		return v, u.kind(), err
	}
	if u.url == "" {
		return 0, "", errors.New("no -pid and no metrics endpoint")
	}
	s, err := scrape(ctx, u.url)
	if err != nil {
		return 0, "", err
	}
	if !s.has(metricRSS) {
		return 0, "", fmt.Errorf("%s has no %s", u.url, metricRSS)
	}
	return int64(s.sum(metricRSS)), u.kind(), nil
}

// read returns one sample of both.
func (u usageSource) read(ctx context.Context) (rss int64, cpu time.Duration, err error) {
	if u.pid > 0 {
		if rss, err = procstat.RSS(u.pid); err != nil {
			return 0, 0, err
		}
		cpu, err = procstat.CPU(u.pid)
		return rss, cpu, err
	}
	s, err := scrape(ctx, u.url)
	if err != nil {
		return 0, 0, err
	}
	if !s.has(metricRSS) || !s.has(metricCPU) {
		return 0, 0, fmt.Errorf("%s has no %s or %s", u.url, metricRSS, metricCPU)
	}
	return int64(s.sum(metricRSS)), time.Duration(s.sum(metricCPU) * float64(time.Second)), nil
}
