package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// stormConfig are the settings of the handshake-storm scenario.
type stormConfig struct {
	Common
	ips         int
	attempts    int
	rate        float64
	policyRate  float64
	policyBurst int
}

// Storm bounds.
const (
	maxStormIPs      = 1000
	maxStormAttempts = 1_000_000
)

func (c *stormConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("handshake-storm", stderr)
	c.Register(fs, time.Minute)
	fs.IntVar(&c.ips, "ips", 4, "source IPs (127.0.0.2, 127.0.0.3, …), each dialing on its own")
	fs.IntVar(&c.attempts, "attempts", 20, "handshake attempts per IP")
	fs.Float64Var(&c.rate, "rate", 10, "attempts per second per IP (0: back to back, each after the previous answer)")
	fs.Float64Var(&c.policyRate, "policy-rate", 3, "the server's ws_handshake rate in r/s, for the expected counts")
	fs.IntVar(&c.policyBurst, "policy-burst", 5, "the server's ws_handshake burst, for the expected counts")
	return fs
}

func (c *stormConfig) Validate() error {
	switch {
	case c.ips <= 0 || c.ips > maxStormIPs:
		return fmt.Errorf("-ips %d: must be in [1, %d]", c.ips, maxStormIPs)
	case c.attempts <= 0 || c.attempts > maxStormAttempts:
		return fmt.Errorf("-attempts %d: must be in [1, %d]", c.attempts, maxStormAttempts)
	case c.rate < 0 || c.rate > MaxRate:
		return fmt.Errorf("-rate %v: must be in [0, %d]", c.rate, MaxRate)
	case c.policyRate <= 0:
		return fmt.Errorf("-policy-rate %v: must be positive", c.policyRate)
	case c.policyBurst < 0:
		return fmt.Errorf("-policy-burst %d is negative", c.policyBurst)
	case c.ips > 1 && !LoopbackTarget(c.URL):
		return fmt.Errorf("-ips %d: several source IPs need a loopback -url; %s is not", c.ips, c.URL)
	}
	return nil
}

// ipResult is what one source IP got.
type ipResult struct {
	IP       string `json:"ip"`
	Attempts int    `json:"attempts"`
	Accepted int    `json:"accepted"`
	Limited  int    `json:"rejected_429"`
	Other    int    `json:"other"`
	// Expected replays the attempt times through the policy's leaky
	// bucket; ClosedForm is burst+1 plus rate per second over the span of
	// the attempts. The server times requests on arrival, a little after
	// the tool starts them, so Accepted may differ from Expected by one
	// at a bucket boundary.
	Expected    int     `json:"expected"`
	ClosedForm  int     `json:"expected_closed_form"`
	SpanSeconds float64 `json:"span_seconds"`
}

// stormReport is the outcome of a handshake storm.
type stormReport struct {
	PolicyRate  float64    `json:"policy_rate"`
	PolicyBurst int        `json:"policy_burst"`
	IPs         []ipResult `json:"ips"`
	Accepted    int        `json:"accepted"`
	Limited     int        `json:"rejected_429"`
	Other       int        `json:"other"`
	Expected    int        `json:"expected"`
	// DecisionsPerSec is attempts answered per second of the storm, all
	// IPs together.
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	// ServerHandshakes is the change of stompgate_handshakes_total by
	// result, when the server has /metrics.
	ServerHandshakes map[string]int64 `json:"server_handshakes,omitempty"`
	// OtherErrors are a few of the errors counted as other.
	OtherErrors []string `json:"other_errors,omitempty"`
}

// RunStorm is the handshake-storm scenario: WebSocket handshakes from
// several source IPs against the per-IP handshake limiter.
func RunStorm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg stormConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return storm(ctx, &cfg, stderr), nil
	})
}

func (c *stormConfig) Title() string {
	rate := "back to back"
	if c.rate > 0 {
		rate = fmt.Sprintf("%g/s", c.rate)
	}
	return fmt.Sprintf("handshake-storm: %d IPs × %d attempts at %s per IP, policy %gr/s burst %d",
		c.ips, c.attempts, rate, c.policyRate, c.policyBurst)
}

// attemptOutcome classifies one handshake.
type attemptOutcome uint8

const (
	outcomeAccepted attemptOutcome = iota
	outcomeLimited
	outcomeOther
)

// tryHandshake tries one WebSocket upgrade and closes it at once when it
// succeeds.
func tryHandshake(ctx context.Context, url string, hc *http.Client) (attemptOutcome, error) {
	ctx, cancel := context.WithTimeout(ctx, client.DialTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc, Subprotocols: client.Subprotocols})
	if err == nil {
		_ = c.CloseNow()
		return outcomeAccepted, nil
	}
	if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
		return outcomeLimited, nil
	}
	return outcomeOther, err
}

func storm(ctx context.Context, cfg *stormConfig, stderr io.Writer) *Report {
	probeURL := cfg.MetricsEndpoint()
	var before scrape.Samples
	if probeURL != "" {
		before, _ = scrape.Fetch(ctx, probeURL)
	}
	cpu0 := procstat.SelfCPU()
	var accepted, limited, other atomic.Int64
	results := make([]ipResult, cfg.ips)
	var errMu sync.Mutex
	var otherErrs []string

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range cfg.ips {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local netip.Addr
			if LoopbackTarget(cfg.URL) {
				local = SourceAddr(blockStorm, i+1)
			}
			hc := client.HTTPClientFrom(local)
			if hc == nil {
				hc = &http.Client{}
			}
			defer hc.CloseIdleConnections()
			res := ipResult{IP: local.String()}
			if !local.IsValid() {
				res.IP = "system-chosen"
			}
			var times []int64
			t0 := time.Now()
			for k := range cfg.attempts {
				if cfg.rate > 0 {
					at := t0.Add(time.Duration(float64(k) / cfg.rate * float64(time.Second)))
					select {
					case <-ctx.Done():
					case <-time.After(time.Until(at)):
					}
				}
				if ctx.Err() != nil {
					break
				}
				times = append(times, time.Since(t0).Milliseconds())
				out, err := tryHandshake(ctx, cfg.URL, hc)
				res.Attempts++
				switch out {
				case outcomeAccepted:
					res.Accepted++
					accepted.Add(1)
				case outcomeLimited:
					res.Limited++
					limited.Add(1)
				default:
					res.Other++
					other.Add(1)
					errMu.Lock()
					if len(otherErrs) < 5 && err != nil && !errors.Is(err, context.Canceled) {
						otherErrs = append(otherErrs, err.Error())
					}
					errMu.Unlock()
				}
			}
			res.Expected = expectedAccepted(cfg.policyRate, cfg.policyBurst, times)
			if n := len(times); n > 0 {
				res.SpanSeconds = report.Round3(float64(times[n-1]) / 1000)
			}
			res.ClosedForm = closedFormAccepted(cfg.policyRate, cfg.policyBurst, res.Attempts, res.SpanSeconds)
			results[i] = res
		}()
	}

	// Progress once a second until every IP is done.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	acc := &report.Series{Name: "accepted/s"}
	rej := &report.Series{Name: "429/s"}
	smp := &report.Sampler{
		Prog: report.NewProgress(stderr, start, cfg.NoProgress),
		Series: []report.Sampled{
			&report.CounterSeries{Series: acc, Read: accepted.Load},
			&report.CounterSeries{Series: rej, Read: limited.Load},
		},
		Fields: func() []report.ProgressField {
			a, l, o := accepted.Load(), limited.Load(), other.Load()
			return []report.ProgressField{{Name: "attempts", Value: a + l + o}, {Name: "accepted", Value: a}, {Name: "429", Value: l}, {Name: "other", Value: o}}
		},
	}
	interrupted, _ := smp.Loop(ctx, start, time.Time{}, finished)
	if interrupted {
		<-finished
	}
	smp.Flush(time.Now())
	elapsed := time.Since(start)
	smp.Show(time.Now())
	smp.Prog.End()

	sr := &stormReport{PolicyRate: cfg.policyRate, PolicyBurst: cfg.policyBurst, IPs: results, OtherErrors: otherErrs}
	total := 0
	for _, r := range results {
		sr.Accepted += r.Accepted
		sr.Limited += r.Limited
		sr.Other += r.Other
		sr.Expected += r.Expected
		total += r.Attempts
	}
	sr.DecisionsPerSec = report.Round3(float64(total) / elapsed.Seconds())
	rep := &Report{
		Scenario:       "handshake-storm",
		Target:         cfg.URL,
		Started:        start,
		LoadSeconds:    report.Round3(elapsed.Seconds()),
		ElapsedSeconds: report.Round3(elapsed.Seconds()),
		Interrupted:    interrupted,
		Storm:          sr,
		Tool:           ToolReportOf(procstat.SelfCPU()-cpu0, 0),
		Series:         []report.Series{*acc, *rej},
		Settings: map[string]any{
			"ips": cfg.ips, "attempts": cfg.attempts, "rate": cfg.rate,
			"policy_rate": cfg.policyRate, "policy_burst": cfg.policyBurst,
		},
	}
	if before != nil {
		if after, err := scrape.Fetch(context.WithoutCancel(ctx), probeURL); err == nil && after.Has(scrape.MetricHandshakes) {
			sr.ServerHandshakes = handshakeDeltas(before, after)
		}
	}
	if cfg.rate == 0 || cfg.rate > cfg.policyRate {
		rep.Notes = append(rep.Notes, "the limiter keeps each IP's bucket after the run: repeat it after a pause of burst/rate seconds or more, or the counts start lower")
	}
	return rep
}

// handshakeDeltas is the change of stompgate_handshakes_total per result
// label.
func handshakeDeltas(before, after scrape.Samples) map[string]int64 {
	out := map[string]int64{}
	for series, v := range after {
		labels, ok := strings.CutPrefix(series, scrape.MetricHandshakes+"{")
		if !ok {
			continue
		}
		_, rest, ok := strings.Cut(labels, `result="`)
		if !ok {
			continue
		}
		res, _, _ := strings.Cut(rest, `"`)
		out[res] += int64(v - before[series])
	}
	return out
}

func (s *stormReport) writeText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "source IP\tattempts\taccepted\t429\tother\texpected\tburst+1+rate×span\tspan (s)\t")
	for _, r := range s.IPs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t\n", r.IP, r.Attempts, r.Accepted, r.Limited, r.Other, r.Expected, r.ClosedForm, r.SpanSeconds)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t\t\t\n", s.Accepted+s.Limited+s.Other, s.Accepted, s.Limited, s.Other, s.Expected)
	tw.Flush()
	fmt.Fprintf(w, "\nhandshakes answered: %.1f per second (all IPs)\n", s.DecisionsPerSec)
	if len(s.ServerHandshakes) > 0 {
		fmt.Fprintf(w, "server stompgate_handshakes_total change: %s\n", countsText(s.ServerHandshakes))
	}
	for _, e := range s.OtherErrors {
		fmt.Fprintln(w, "other:", e)
	}
	fmt.Fprintln(w)
}

// countsText writes labelled counts as "accepted 20, rejected 60", in
// label order.
func countsText(m map[string]int64) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
