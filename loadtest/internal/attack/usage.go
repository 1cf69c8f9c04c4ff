package attack

import (
	"context"
	"sync"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// defaultSampleInterval is how often the abuse scenario reads the
// server's RSS and CPU: an attack can grow the heap by 200 MB a second,
// and a tenth of a second catches its peak within a few percent.
const defaultSampleInterval = 100 * time.Millisecond

// usageSample is one reading.
type usageSample struct {
	at  time.Time
	rss int64
	cpu time.Duration
}

// usageSampler reads a usageSource every interval in its own goroutine
// until stop.
type usageSampler struct {
	src      scrape.Usage
	interval time.Duration
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	samples []usageSample // guarded by mu
	err     error         // first failed read; guarded by mu
}

// startSampler takes a first sample at once and then one per interval.
// With no source it samples nothing.
func startSampler(ctx context.Context, src scrape.Usage, interval time.Duration) *usageSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &usageSampler{src: src, interval: interval, cancel: cancel}
	if src.Kind() == "" {
		return s
	}
	s.take(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.take(ctx)
			}
		}
	}()
	return s
}

func (s *usageSampler) take(ctx context.Context) {
	rss, cpu, err := s.src.Read(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil && ctx.Err() == nil {
			s.err = err
		}
		return
	}
	s.samples = append(s.samples, usageSample{at: time.Now(), rss: rss, cpu: cpu})
}

// stop takes a last sample and ends the goroutine.
func (s *usageSampler) stop() {
	if s.src.Kind() != "" {
		s.take(context.Background())
	}
	s.cancel()
	s.wg.Wait()
}

// serverUsage is what the server's process used during one attack.
type serverUsage struct {
	// Source is "proc" (/proc/<pid>), "metrics" (the process_* series of
	// the metrics page) or "" when neither was available.
	Source  string `json:"source,omitempty"`
	Samples int    `json:"samples"`
	// RSSBefore is the first sample, before the attack's sessions
	// opened; RSSPeak the largest; RSSEnd the last, after the attack
	// and the honest sessions' drain.
	RSSBefore int64 `json:"rss_before_bytes,omitempty"`
	RSSPeak   int64 `json:"rss_peak_bytes,omitempty"`
	RSSEnd    int64 `json:"rss_end_bytes,omitempty"`
	// CPUSeconds is the server's user+system CPU time over the attack's
	// load period; CPUCores that divided by the period; CPUCoresPeak
	// the most over any second of it.
	CPUSeconds   float64 `json:"cpu_seconds"`
	CPUCores     float64 `json:"cpu_cores"`
	CPUCoresPeak float64 `json:"cpu_cores_peak"`
	Error        string  `json:"error,omitempty"`
}

// usage summarizes the samples; start and end bound the load period.
func (s *usageSampler) usage(start, end time.Time) serverUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := serverUsage{Source: s.src.Kind(), Samples: len(s.samples)}
	if s.err != nil {
		u.Error = s.err.Error()
	}
	if len(s.samples) == 0 {
		if u.Source != "" && u.Error == "" {
			u.Error = "no sample taken"
		}
		u.Source = ""
		return u
	}
	u.RSSBefore = s.samples[0].rss
	u.RSSEnd = s.samples[len(s.samples)-1].rss
	first, last := -1, -1
	for i, x := range s.samples {
		u.RSSPeak = max(u.RSSPeak, x.rss)
		if first < 0 && !x.at.Before(start) {
			first = i
		}
		if !x.at.After(end) {
			last = i
		}
	}
	if first < 0 || last <= first {
		// A period shorter than an interval: use the whole span.
		first, last = 0, len(s.samples)-1
	}
	a, b := s.samples[first], s.samples[last]
	if span := b.at.Sub(a.at); span > 0 {
		u.CPUSeconds = report.Round3((b.cpu - a.cpu).Seconds())
		u.CPUCores = report.Round3(float64(b.cpu-a.cpu) / float64(span))
	}
	// Peak: each sample against the first one at least a second later.
	j := first
	for i := first; i <= last; i++ {
		for j <= last && s.samples[j].at.Sub(s.samples[i].at) < time.Second {
			j++
		}
		if j > last {
			break
		}
		x, y := s.samples[i], s.samples[j]
		u.CPUCoresPeak = max(u.CPUCoresPeak, report.Round3(float64(y.cpu-x.cpu)/float64(y.at.Sub(x.at))))
	}
	u.CPUCoresPeak = max(u.CPUCoresPeak, u.CPUCores)
	return u
}

// rssPerSecond is the largest RSS in each second since base, in MiB, for
// the chart.
func (s *usageSampler) rssPerSecond(base time.Time) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []float64
	for _, x := range s.samples {
		i := int(x.at.Sub(base) / time.Second)
		if i < 0 {
			continue
		}
		for len(out) <= i {
			out = append(out, 0)
		}
		out[i] = max(out[i], report.Round3(scenario.MiB(x.rss)))
	}
	return out
}
