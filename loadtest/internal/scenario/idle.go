package scenario

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// idleConfig are the settings of the idle scenario.
type idleConfig struct {
	Common
	sessions      int
	sessionsPerIP int
	concurrency   int
	settle        time.Duration
}

// Idle bounds and defaults.
const (
	defaultIdleSessions = 1000
	// defaultIdleConcurrency bounds dials in flight: enough to open
	// 10,000 sessions in seconds, few enough that the accept path is not
	// flooded.
	defaultIdleConcurrency = 200
	// idleHeartBeat is the heart-beat both ways (CONNECT heart-beat
	// 10000,10000) and the interval of the client's EOLs.
	idleHeartBeat = 10 * time.Second
	// heartBeatSlots spreads the client's EOLs over the interval: every
	// idleHeartBeat/heartBeatSlots one slot of sessions sends, so the
	// sessions do not all write in the same instant.
	heartBeatSlots = 100
)

func (c *idleConfig) FlagSet(stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet("idle", stderr)
	c.Register(fs, 30*time.Second)
	fs.IntVar(&c.sessions, "sessions", defaultIdleSessions, "sessions to open and hold")
	fs.IntVar(&c.sessionsPerIP, "sessions-per-ip", 1, "sessions per loopback source address (127.1.x.y); above 6 the default handshake policy refuses some")
	fs.IntVar(&c.concurrency, "concurrency", defaultIdleConcurrency, "dials in flight at once")
	fs.DurationVar(&c.settle, "settle", 2*time.Second, "pause after the last session connected before the RSS is read")
	return fs
}

func (c *idleConfig) Validate() error {
	switch {
	case c.sessions <= 0 || c.sessions > maxSessions:
		return fmt.Errorf("-sessions %d: must be in [1, %d]", c.sessions, maxSessions)
	case c.sessionsPerIP <= 0:
		return fmt.Errorf("-sessions-per-ip %d: must be positive", c.sessionsPerIP)
	case c.concurrency <= 0:
		return fmt.Errorf("-concurrency %d: must be positive", c.concurrency)
	case c.settle < 0:
		return fmt.Errorf("-settle %v is negative", c.settle)
	}
	return nil
}

// idleReport is the outcome of the idle scenario.
type idleReport struct {
	Requested int `json:"requested"`
	Opened    int `json:"opened"`
	Failed    int `json:"failed"`
	// ClosedByServer counts sessions the server ended while held (a
	// missed heart-beat would show here).
	ClosedByServer int64   `json:"closed_by_server"`
	SetupSeconds   float64 `json:"setup_seconds"`
	// RSSSource is "proc" (-pid) or "metrics"
	// (process_resident_memory_bytes); empty when neither was available.
	RSSSource string `json:"rss_source,omitempty"`
	// RSSBefore is read before any session opened, RSSAfter after the
	// last one connected and the settle pause, RSSEnd at the end of the
	// hold.
	RSSBefore int64 `json:"rss_before_bytes,omitempty"`
	RSSAfter  int64 `json:"rss_after_bytes,omitempty"`
	RSSEnd    int64 `json:"rss_end_bytes,omitempty"`
	// PerSessionKiB is (RSSAfter − RSSBefore) / Opened in KiB.
	PerSessionKiB float64  `json:"rss_per_session_kib,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

// RunIdle is the idle scenario: heart-beating sessions that send
// nothing, and what each costs the server in RSS.
func RunIdle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg idleConfig
	return RunScenario(ctx, &cfg, args, stdout, stderr, func(ctx context.Context) (*Report, error) {
		return idle(ctx, &cfg, stderr), nil
	})
}

func (c *idleConfig) Title() string {
	return fmt.Sprintf("idle: %d sessions with heart-beats every %v, held %v", c.sessions, idleHeartBeat, c.Duration)
}

// idleSession is one held session.
type idleSession struct {
	conn *client.Conn
	gone atomic.Bool
}

func idle(ctx context.Context, cfg *idleConfig, stderr io.Writer) *Report {
	start := time.Now()
	end := start.Add(cfg.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	cpu0 := procstat.SelfCPU()
	ir := &idleReport{Requested: cfg.sessions}
	rss := scrape.Usage{PID: cfg.PID, URL: cfg.MetricsEndpoint()}
	var errs []string
	noteErr := func(what string, err error) {
		if len(errs) < 5 {
			errs = append(errs, what+": "+err.Error())
		}
	}
	if v, src, err := rss.RSS(ctx); err == nil {
		ir.RSSBefore, ir.RSSSource = v, src
	} else {
		noteErr("RSS before", err)
	}

	d := NewDialer(&cfg.Common)
	spread := cfg.Spread && LoopbackTarget(cfg.URL)
	var (
		mu       sync.Mutex
		sessions []*idleSession // guarded by mu
		failed   atomic.Int64
		closed   atomic.Int64
		done     atomic.Bool
		readers  sync.WaitGroup
		errMu    sync.Mutex
	)
	hbDone := make(chan struct{})
	var hbWG sync.WaitGroup
	hbWG.Add(1)
	go func() {
		defer hbWG.Done()
		heartBeats(hbDone, idleHeartBeat, func(slot, slots int) []*client.Conn {
			mu.Lock()
			defer mu.Unlock()
			var due []*client.Conn
			for i := slot; i < len(sessions); i += slots {
				if !sessions[i].gone.Load() {
					due = append(due, sessions[i].conn)
				}
			}
			return due
		})
	}()

	opened := &report.Series{Name: "sessions open"}
	count := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return int64(len(sessions))
	}
	smp := &report.Sampler{
		Prog:   report.NewProgress(stderr, start, cfg.NoProgress),
		Series: []report.Sampled{&report.GaugeSeries{Series: opened, Read: func() float64 { return float64(count() - closed.Load()) }}},
		Fields: func() []report.ProgressField {
			return []report.ProgressField{{Name: "opened", Value: count()}, {Name: "closed by server", Value: closed.Load()}, {Name: "failed", Value: failed.Load()}}
		},
	}
	stopTicker := make(chan struct{})
	var tickWG sync.WaitGroup
	tickWG.Add(1)
	go func() {
		defer tickWG.Done()
		smp.Loop(ctx, start, time.Time{}, stopTicker)
	}()

	_ = Parallel(ctx, cfg.sessions, cfg.concurrency, func(i int) error {
		var hc *http.Client
		if spread {
			hc = client.HTTPClientFrom(SourceAddr(blockIdle, i/cfg.sessionsPerIP))
			defer hc.CloseIdleConnections()
		}
		c, err := d.Dial(ctx, hc, "10000,10000")
		if err != nil {
			failed.Add(1)
			errMu.Lock()
			noteErr("dial", err)
			errMu.Unlock()
			return nil
		}
		s := &idleSession{conn: c}
		mu.Lock()
		sessions = append(sessions, s)
		mu.Unlock()
		readers.Add(1)
		go func() {
			defer readers.Done()
			// Read and discard: server heart-beats, and the close.
			for {
				if _, err := c.ReadMessage(context.Background()); err != nil {
					if !done.Load() {
						closed.Add(1)
						s.gone.Store(true)
					}
					return
				}
			}
		}()
		return nil
	})
	ir.SetupSeconds = report.Round3(time.Since(start).Seconds())
	mu.Lock()
	ir.Opened = len(sessions)
	mu.Unlock()
	ir.Failed = int(failed.Load())

	select {
	case <-ctx.Done():
	case <-time.After(cfg.settle):
	}
	if ir.RSSSource != "" {
		if v, _, err := rss.RSS(context.WithoutCancel(ctx)); err == nil {
			ir.RSSAfter = v
			if ir.Opened > 0 {
				ir.PerSessionKiB = report.Round3(float64(v-ir.RSSBefore) / float64(ir.Opened) / 1024)
			}
		} else {
			noteErr("RSS after", err)
		}
	}
	<-ctx.Done() // hold until the end of -duration (or Ctrl-C)
	interrupted := time.Now().Before(end.Add(-50 * time.Millisecond))
	if ir.RSSSource != "" {
		if v, _, err := rss.RSS(context.Background()); err == nil {
			ir.RSSEnd = v
		}
	}
	close(stopTicker)
	tickWG.Wait()
	smp.Show(time.Now())
	smp.Prog.End()
	close(hbDone)
	hbWG.Wait()
	done.Store(true)
	mu.Lock()
	for _, s := range sessions {
		s.conn.Close()
	}
	mu.Unlock()
	readers.Wait()
	ir.ClosedByServer = closed.Load()
	ir.Errors = errs

	rep := &Report{
		Scenario:       "idle",
		Target:         cfg.URL,
		Started:        start,
		LoadSeconds:    report.Round3(time.Since(start).Seconds()),
		ElapsedSeconds: report.Round3(time.Since(start).Seconds()),
		Interrupted:    interrupted,
		Idle:           ir,
		Tool:           ToolReportOf(procstat.SelfCPU()-cpu0, 0),
		Series:         []report.Series{*opened},
		Settings: map[string]any{
			"sessions": cfg.sessions, "sessions_per_ip": cfg.sessionsPerIP,
			"concurrency": cfg.concurrency, "settle": cfg.settle.String(),
			"duration": cfg.Duration.String(), "heart_beat": "10000,10000",
		},
	}
	if ir.RSSSource == "" {
		rep.Notes = append(rep.Notes, "server RSS not measured: give -pid, or a server with process_resident_memory_bytes on /metrics")
	}
	return rep
}

// heartBeats sends an EOL to every session once per interval, one slot
// of sessions per interval/heartBeatSlots so that they do not all write
// in the same instant, until done closes. due returns the live sessions
// of a slot.
func heartBeats(done <-chan struct{}, interval time.Duration, due func(slot, slots int) []*client.Conn) {
	t := time.NewTicker(interval / heartBeatSlots)
	defer t.Stop()
	eol := []byte{'\n'}
	for slot := 0; ; slot = (slot + 1) % heartBeatSlots {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for _, c := range due(slot, heartBeatSlots) {
			ctx, cancel := context.WithTimeout(context.Background(), client.WriteTimeout)
			_ = c.Write(ctx, eol)
			cancel()
		}
	}
}

func (r *idleReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "sessions: %d requested, %d opened, %d failed, %d closed by the server while held; setup %.1fs\n",
		r.Requested, r.Opened, r.Failed, r.ClosedByServer, r.SetupSeconds)
	if r.RSSSource != "" {
		src := "/proc VmRSS"
		if r.RSSSource == "metrics" {
			src = scrape.MetricRSS
		}
		fmt.Fprintf(w, "server RSS (%s): before %.1f MiB, after %.1f MiB, at the end %.1f MiB\n",
			src, MiB(r.RSSBefore), MiB(r.RSSAfter), MiB(r.RSSEnd))
		fmt.Fprintf(w, "RSS per session: %.2f KiB ((after − before) / opened)\n", r.PerSessionKiB)
	}
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
	fmt.Fprintln(w)
}

// MiB is b bytes in mebibytes.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }
