package scenario

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
	"github.com/stompgate/stompgate/stompframe"
)

// reconnectConfig are the settings of the reconnect-storm scenario.
type reconnectConfig struct {
	Common
	wsserver      string
	redisURL      string
	serverArgs    string
	sessions      int
	untouched     int
	untouchedRate float64
	stop          string
	settle        time.Duration
	fillTimeout   time.Duration
	concurrency   int
	kernelStamps  bool
}

// Reconnect-storm bounds and defaults, each with its reason.
const (
	// defaultStormSessions is the sessions moved: 10,000 fit under the
	// 20,000 open files a process may have here, with the server and
	// the tool in separate processes.
	defaultStormSessions = 10_000
	// maxUntouchedRate is the send limit of wsserver's default policy:
	// faster, the untouched sessions would measure the limiter.
	maxUntouchedRate = 20
	// maxStormErrors bounds the errors kept for the report, and
	// maxRefusalReasons the distinct ERROR messages counted apart.
	maxStormErrors    = 5
	maxRefusalReasons = 20
	// rssSampleEvery is how often B's RSS is read during the storm.
	rssSampleEvery = 100 * time.Millisecond
	// metricPeakAdmitted is B's gauge of the most sessions it admitted
	// within any 100 ms: the arrivals as the server counts them.
	metricPeakAdmitted = "stompgate_admission_peak_admitted"
	// metricGCCycles counts B's garbage collections, and
	// metricProcsChanges its changes of processors (-adaptive-procs):
	// what B's own sessions may have waited on during the storm.
	metricGCCycles     = "go_gc_duration_seconds_count"
	metricProcsChanges = "stompgate_procs_changes_total"
)

func (c *reconnectConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("reconnect-storm", stderr)
	c.Register(fs, 2*time.Minute)
	// The shared flags that mean something else here, or nothing: the
	// scenario starts its own servers and spreads its clients always.
	fs.Lookup("duration").Usage = "how long the clients may take to come back after A stops"
	for _, name := range []string{"url", "metrics-url", "pid", "spread-sources"} {
		fs.Lookup(name).Usage = "not used: the scenario starts its own servers and gives every client its own source address"
	}
	fs.StringVar(&c.wsserver, "wsserver", "wsserver", "the wsserver binary to start instances A and B from (a name is looked up in PATH)")
	fs.StringVar(&c.redisURL, "redis-url", "", "the Redis A and B share (empty: start redis-server from PATH on a free loopback port)")
	fs.StringVar(&c.serverArgs, "server-args", "", "more flags for both instances, split at spaces (e.g. \"-max-sessions 12000 -admit-rate 500\"); -admit-rate and -memory-limit are read back for the report")
	fs.IntVar(&c.sessions, "sessions", defaultStormSessions, "sessions held on A and moved to B when A stops")
	fs.IntVar(&c.untouched, "untouched", 100, "sessions held on B throughout, publishing to themselves, whose delivery latency is measured")
	fs.Float64Var(&c.untouchedRate, "untouched-rate", 1, "messages per second each untouched session publishes (a chat user peaks near 1.3)")
	fs.StringVar(&c.stop, "stop", "kill", "how A stops: kill (SIGKILL, a crash) or drain (SIGTERM; give A -drain-period in -server-args)")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "how long the untouched sessions' latency is measured before A stops")
	fs.DurationVar(&c.fillTimeout, "fill-timeout", 5*time.Minute, "how long the sessions may take to reach A")
	fs.IntVar(&c.concurrency, "concurrency", 100, "simultaneous dials while filling A")
	fs.BoolVar(&c.kernelStamps, "kernel-stamps", true, "on Linux, take the kernel's receive time of every read (SO_TIMESTAMPNS): arrivals are counted when each CONNECTED reached the client's socket, and each untouched latency is split into the server's part (stamp to the socket) and the tool's (socket to read); elsewhere ignored")
	return fs
}

func (c *reconnectConfig) Validate() error {
	switch {
	case c.sessions <= 0 || c.sessions > MaxSources:
		return fmt.Errorf("-sessions %d: must be in [1, %d]", c.sessions, MaxSources)
	case c.untouched < 0 || c.untouched > MaxSources:
		return fmt.Errorf("-untouched %d: must be in [0, %d]", c.untouched, MaxSources)
	case c.untouchedRate <= 0 || c.untouchedRate > maxUntouchedRate:
		return fmt.Errorf("-untouched-rate %v: must be in (0, %d]", c.untouchedRate, maxUntouchedRate)
	case c.stop != "kill" && c.stop != "drain":
		return fmt.Errorf("-stop %q: must be kill or drain", c.stop)
	case c.settle < 0:
		return fmt.Errorf("-settle %v is negative", c.settle)
	case c.fillTimeout <= 0:
		return fmt.Errorf("-fill-timeout %v: must be positive", c.fillTimeout)
	case c.concurrency <= 0:
		return fmt.Errorf("-concurrency %d: must be positive", c.concurrency)
	case c.wsserver == "":
		return errors.New("-wsserver is empty")
	}
	if v, ok := flagValue(strings.Fields(c.serverArgs), "memory-limit"); ok {
		if _, err := parseBytes(v); err != nil {
			return fmt.Errorf("-server-args: -memory-limit: %w", err)
		}
	}
	if v, ok := flagValue(strings.Fields(c.serverArgs), "admit-rate"); ok {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("-server-args: -admit-rate %q is not a number", v)
		}
	}
	return nil
}

func (c *reconnectConfig) Title() string {
	return fmt.Sprintf("reconnect-storm: %d sessions move from A (%s) to B, %d untouched sessions on B at %g msg/s, server args %q",
		c.sessions, c.stop, c.untouched, c.untouchedRate, c.serverArgs)
}

// RunReconnectStorm is the reconnect-storm scenario: two wsserver
// instances sharing a Redis, N sessions on A, A stopped, every session
// reconnecting to B with the shipped backoff while B's own sessions
// keep publishing.
func RunReconnectStorm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg reconnectConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return reconnectStorm(ctx, &cfg, stderr)
	})
}

// attempt is one reconnect attempt at B.
type attempt struct {
	at     time.Time
	took   time.Duration // until CONNECTED or the refusal
	reason string        // "" when it reached CONNECTED
	// afterRetryAfter is set when the attempt followed a refusal that
	// carried a Retry-After; early when it came sooner than that.
	afterRetryAfter, early bool
}

// stormRun is the state of one storm, shared by the clients.
type stormRun struct {
	dialerA *client.Dialer
	dialerB *client.Dialer
	sem     chan struct{} // bounds the fill's dials
	fillCtx context.Context

	onA, fillFailed, lost, back, droppedOnB atomic.Int64
	fillWG, clients                         sync.WaitGroup

	mu       sync.Mutex // guards attempts, arrivals and errs
	attempts []attempt
	arrivals []connected
	errs     []string
}

func (s *stormRun) noteErr(what string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < maxStormErrors {
		s.errs = append(s.errs, what+": "+err.Error())
	}
}

// refusalReason names why an attempt failed, from a bounded set.
func refusalReason(err error) string {
	var he *client.HandshakeError
	var ef *client.ErrorFrame
	switch {
	case errors.As(err, &he):
		return "HTTP " + strconv.Itoa(he.Status)
	case errors.As(err, &ef):
		msg := ef.Message
		if len(msg) > 60 {
			msg = msg[:60]
		}
		return "ERROR " + strconv.Quote(msg)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed before CONNECTED"
	}
	return "other"
}

// holdSession reads c until the server ends the session or ctx ends
// (which closes it), and returns the retry-after of an ERROR frame the
// server sent before it closed, 0 when none.
func holdSession(ctx context.Context, c *client.Conn) time.Duration {
	var ra time.Duration
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			c.Close()
			return ra
		}
		c.Decoder.Feed(msg)
		for {
			f, err := c.Decoder.Next()
			if err != nil || f == nil {
				break
			}
			if f.Command == stompframe.CommandError {
				ra = client.ParseRetryAfter(f.Get("retry-after"), time.Now())
			}
		}
	}
}

// sleepCtx waits d or until ctx ends, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// fill connects one client to A, retrying with bo until the fill's
// deadline; nil when it never got there.
func (s *stormRun) fill(hc *http.Client, bo *client.Backoff) *client.Conn {
	defer s.fillWG.Done()
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	for {
		c, err := s.dialerA.Dial(s.fillCtx, hc, "0,0")
		if err == nil {
			s.onA.Add(1)
			return c
		}
		if s.fillCtx.Err() != nil || !sleepCtx(s.fillCtx, bo.Next(client.RetryAfter(err))) {
			s.fillFailed.Add(1)
			s.noteErr("filling A", err)
			return nil
		}
	}
}

// runClient is one client: on A until A goes, then back on B with the
// backoff, held there until ctx ends.
func (s *stormRun) runClient(ctx context.Context, i int) {
	defer s.clients.Done()
	hc := client.HTTPClientFrom(SourceAddr(blockReconnect, i))
	defer hc.CloseIdleConnections()
	var bo client.Backoff
	c := s.fill(hc, &bo)
	if c == nil {
		return
	}
	ra := holdSession(ctx, c)
	if ctx.Err() != nil {
		return
	}
	s.lost.Add(1)
	// The session on A stayed up since the fill: the schedule starts
	// afresh, as the browser helper's does.
	bo.Reset()
	var refusedAt time.Time
	for {
		if !sleepCtx(ctx, bo.Next(ra)) {
			return
		}
		a := attempt{at: time.Now(), afterRetryAfter: ra > 0}
		a.early = ra > 0 && a.at.Sub(refusedAt) < ra
		nc, err := s.dialerB.Dial(ctx, hc, "0,0")
		if ctx.Err() != nil {
			if nc != nil {
				nc.Close()
			}
			return // cut short by the end of the run: not counted
		}
		a.took = time.Since(a.at)
		if err == nil {
			// The last read of the dial brought the CONNECTED.
			arr := connected{read: time.Now()}
			if k, ok := nc.Stamps.Last(); ok {
				arr.kernel = k
			}
			s.mu.Lock()
			s.attempts = append(s.attempts, a)
			s.arrivals = append(s.arrivals, arr)
			s.mu.Unlock()
			s.back.Add(1)
			holdSession(ctx, nc)
			if ctx.Err() == nil {
				s.droppedOnB.Add(1)
			}
			return
		}
		refusedAt = time.Now()
		a.reason = refusalReason(err)
		if a.reason == "other" {
			s.noteErr("reconnecting", err)
		}
		s.mu.Lock()
		s.attempts = append(s.attempts, a)
		s.mu.Unlock()
		ra = client.RetryAfter(err)
	}
}

func reconnectStorm(ctx context.Context, cfg *reconnectConfig, stderr io.Writer) (*Report, error) {
	start := time.Now()
	cpu0 := procstat.SelfCPU()
	extra := strings.Fields(cfg.serverArgs)
	redisURL := cfg.redisURL
	if redisURL == "" {
		rp, url, err := startRedis(ctx)
		if err != nil {
			return nil, err
		}
		defer rp.stop(procStopGrace)
		redisURL = url
	}
	a, err := startWsserver(ctx, "wsserver A", cfg.wsserver, redisURL, extra)
	if err != nil {
		return nil, err
	}
	defer a.stop(procStopGrace)
	b, err := startWsserver(ctx, "wsserver B", cfg.wsserver, redisURL, extra)
	if err != nil {
		return nil, err
	}
	defer b.stop(procStopGrace)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	dialer := func(url string) *client.Dialer {
		d := NewDialer(&cfg.Common)
		d.URL = url
		d.KernelStamps = cfg.kernelStamps
		return d
	}
	fillCtx, fillCancel := context.WithTimeout(runCtx, cfg.fillTimeout)
	defer fillCancel()
	s := &stormRun{dialerA: dialer(a.wsURL()), dialerB: dialer(b.wsURL()),
		sem: make(chan struct{}, cfg.concurrency), fillCtx: fillCtx}
	rr := &reconnectReport{Sessions: cfg.sessions, Stop: cfg.stop, Refusals: map[string]int{}}
	if v, ok := flagValue(extra, "admit-rate"); ok {
		rr.AdmitRate, _ = strconv.ParseFloat(v, 64)
	}
	if v, ok := flagValue(extra, "memory-limit"); ok {
		rr.MemoryLimitBytes, _ = parseBytes(v)
	}

	smp := &report.Sampler{
		Prog: report.NewProgress(stderr, start, cfg.NoProgress),
		Fields: func() []report.ProgressField {
			return []report.ProgressField{{Name: "on A", Value: s.onA.Load()}, {Name: "lost", Value: s.lost.Load()}, {Name: "back on B", Value: s.back.Load()}}
		},
	}
	stopTicker := make(chan struct{})
	var tickWG sync.WaitGroup
	tickWG.Add(1)
	go func() {
		defer tickWG.Done()
		smp.Loop(runCtx, start, time.Time{}, stopTicker)
	}()

	u := newUntouched()
	// Everything started below ends with runCtx; wait for it however
	// the run ends.
	defer func() {
		cancel()
		s.clients.Wait()
		u.wg.Wait()
		close(stopTicker)
		tickWG.Wait()
		smp.Prog.End()
	}()
	if err := u.open(runCtx, dialer(b.wsURL()), cfg.untouched, cfg.untouchedRate, cfg.TopicPrefix); err != nil {
		return nil, err
	}

	s.fillWG.Add(cfg.sessions)
	s.clients.Add(cfg.sessions)
	for i := range cfg.sessions {
		go s.runClient(runCtx, i)
	}
	s.fillWG.Wait()
	rr.FillSeconds = report.Round3(time.Since(start).Seconds())
	rr.OnA, rr.FillFailed = int(s.onA.Load()), int(s.fillFailed.Load())
	u.phase.Store(phaseBefore)
	sleepCtx(runCtx, cfg.settle)

	before, _ := scrape.Fetch(runCtx, b.metricsURL())
	var rssPeak atomic.Int64
	rssDone := make(chan struct{})
	var rssWG sync.WaitGroup
	rssWG.Add(1)
	go func() {
		defer rssWG.Done()
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			if v, err := procstat.RSS(b.pid()); err == nil && v > rssPeak.Load() {
				rssPeak.Store(v)
			}
			select {
			case <-rssDone:
				return
			case <-t.C:
			}
		}
	}()

	serverCPU0, _ := procstat.CPU(b.pid())
	toolCPU0 := procstat.SelfCPU()
	stopAt := time.Now()
	u.startStorm()
	if cfg.stop == "kill" {
		a.kill()
	} else if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		a.kill()
	}
	deadline := time.NewTimer(cfg.Duration)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	interrupted := false
wait:
	for s.back.Load() < s.onA.Load() {
		select {
		case <-ctx.Done():
			interrupted = true
			break wait
		case <-deadline.C:
			break wait
		case <-tick.C:
		}
	}
	u.phase.Store(phaseAfter)
	stormSeconds := time.Since(stopAt).Seconds()
	if v, err := procstat.CPU(b.pid()); err == nil {
		rr.ServerCPUSeconds = report.Round3((v - serverCPU0).Seconds())
	}
	rr.ToolCPUSeconds = report.Round3((procstat.SelfCPU() - toolCPU0).Seconds())
	rr.StormSeconds = report.Round3(stormSeconds)
	close(rssDone)
	rssWG.Wait()
	rr.RSSPeakBytes = rssPeak.Load()
	if v, err := peakRSS(b.pid()); err == nil {
		rr.RSSHWMBytes = v
	}
	if after, err := scrape.Fetch(context.WithoutCancel(ctx), b.metricsURL()); err == nil && before != nil {
		if v, ok := after[metricPeakAdmitted]; ok {
			rr.ServerPeakAdmitted = int(v)
		}
		rr.ServerGCCycles = int64(after[metricGCCycles] - before[metricGCCycles])
		for k, v := range after {
			if strings.HasPrefix(k, metricProcsChanges) {
				rr.ServerProcsChanges += int64(v - before[k])
			}
		}
		rr.ServerHandshakes = map[string]int64{}
		for k, v := range after {
			if strings.HasPrefix(k, "stompgate_handshakes_total{") {
				if d := int64(v - before[k]); d != 0 {
					rr.ServerHandshakes[strings.TrimPrefix(k, "stompgate_handshakes_total")] = d
				}
			}
		}
		rr.ServerListenerRefused = listenerRefusals(before, after)
	}
	cancel()
	s.clients.Wait()
	u.wg.Wait()

	rr.Lost, rr.Back = int(s.lost.Load()), int(s.back.Load())
	s.mu.Lock()
	stamped := cfg.kernelStamps && client.KernelStampsSupported
	arrivals, read := arrivalTimes(s.arrivals, stopAt, stamped)
	rr.fillSplit(s.arrivals, read, stamped)
	var attemptTimes []time.Duration
	took := report.NewHistogram()
	for _, at := range s.attempts {
		attemptTimes = append(attemptTimes, at.at.Sub(stopAt))
		report.RecordMicros(took, at.took.Microseconds())
		if at.reason != "" {
			k := at.reason
			if _, ok := rr.Refusals[k]; !ok && len(rr.Refusals) >= maxRefusalReasons {
				k = "(other reasons)"
			}
			rr.Refusals[k]++
		}
		if at.afterRetryAfter {
			rr.RetryAfterHonoured++
			if at.early {
				rr.RetryAfterEarly++
			}
		}
	}
	rr.Attempts = len(s.attempts)
	if rr.Attempts > 0 {
		rr.AttemptLatency = report.Summarize(took)
	}
	rr.Errors = s.errs
	s.mu.Unlock()
	rr.Back99Seconds = backAt(arrivals, (rr.Lost*99+99)/100)
	if rr.Back == rr.Lost {
		rr.Back100Seconds = backAt(arrivals, rr.Lost)
	}
	if rr.AdmitRate > 0 {
		rr.IdealSeconds = report.Round3(float64(rr.Lost) / rr.AdmitRate)
	}
	rr.ArrivalsPer100ms, rr.AttemptsPer100ms = bins(arrivals), bins(attemptTimes)
	rr.PeakArrivalsPerSecond = peakWindow(rr.ArrivalsPer100ms, int(time.Second/binWidth))
	for i, v := range rr.ArrivalsPer100ms {
		if v > rr.PeakArrivals {
			rr.PeakArrivals, rr.PeakAtSeconds = v, report.Round3(float64(i)*binWidth.Seconds())
		}
	}
	rr.Untouched = u.summary()
	if d := s.droppedOnB.Load(); d > 0 {
		rr.Errors = append(rr.Errors, fmt.Sprintf("%d reconnected sessions were ended by B before the end", d))
	}

	return &Report{
		Scenario:       "reconnect-storm",
		Target:         fmt.Sprintf("A %s, B %s", a.wsURL(), b.wsURL()),
		Started:        start,
		Settings:       map[string]any{"sessions": cfg.sessions, "untouched": cfg.untouched, "untouched_rate": cfg.untouchedRate, "stop": cfg.stop, "server_args": cfg.serverArgs},
		LoadSeconds:    report.Round3(stormSeconds),
		ElapsedSeconds: report.Round3(time.Since(start).Seconds()),
		Interrupted:    interrupted,
		Reconnect:      rr,
		Series: []report.Series{
			{Name: "arrivals at B per 100 ms", Values: floats(rr.ArrivalsPer100ms), Step: binWidth},
			{Name: "attempts at B per 100 ms", Values: floats(rr.AttemptsPer100ms), Step: binWidth, Style: report.StyleDashed, Group: "attempts"},
		},
		Tool: toolReport{CPUSeconds: report.Round3((procstat.SelfCPU() - cpu0).Seconds())},
	}, nil
}

// floats converts counts for a chart series.
func floats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
