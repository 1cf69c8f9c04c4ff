package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/procstat"
	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// Run phases' bounds, each with its reason.
const (
	// DialConcurrency bounds simultaneous dials, so that the server's
	// accept path, not a thundering herd, sets the pace.
	DialConcurrency = 50
	// startDelay separates the last session's setup from the first SEND,
	// so that every publisher starts at the same instant.
	startDelay = 100 * time.Millisecond
	// drainQuiet and drainMax bound the wait for in-flight messages after
	// the load period: it ends when everything expected arrived, when
	// nothing arrived for drainQuiet, or after drainMax.
	drainQuiet = time.Second
	drainMax   = 10 * time.Second
	// settleTick is how often the drain checks progress.
	settleTick = 50 * time.Millisecond
)

// LoadRun is a flood or throughput run: classes of publishers and
// subscribers, sampled once a second, drained, then reported.
type LoadRun struct {
	cfg     *Common
	stderr  io.Writer
	dialer  *client.Dialer
	Clock   load.Clock    // the run's zero for latency stamps
	Classes []*load.Class // every class of the run, in report order
	win     *load.Window  // unpaced publishers only

	sources atomic.Int64 // source addresses handed out
	Spread  bool         // hand out source addresses at all

	done    atomic.Bool // set before the connections are closed
	readers sync.WaitGroup
	// SubSetup, when set, adjusts each subscriber before its reader
	// starts (the abuse scenario's browser-like, slow-link readers).
	SubSetup func(*load.Subscriber)
	// Sampled are sampled once a second over the load period beside
	// the run's own series, which they do not join (the rooms
	// scenario's per-second latency).
	Sampled []report.Sampled
	// perMessage, when positive, is how many SEND frames a publisher
	// packs into one WebSocket message at most (1: one frame per
	// message, as a browser's STOMP client sends); 0 packs up to
	// maxBatchBytes.
	perMessage int64
	// heartBeat is the heart-beat offered both ways in CONNECT, and how
	// often every session sends an EOL while it is (0: none). Set it
	// with startHeartBeats before any session is dialed.
	heartBeat time.Duration
	hbDone    chan struct{}
	hbWG      sync.WaitGroup

	mu    sync.Mutex
	conns []*client.Conn // guarded by mu
}

// NewLoadRun returns an empty run against cfg's target; progress goes to
// stderr.
func NewLoadRun(cfg *Common, stderr io.Writer) *LoadRun {
	return &LoadRun{cfg: cfg, stderr: stderr, dialer: NewDialer(cfg), Clock: load.Clock{Base: time.Now()},
		Spread: cfg.Spread && LoopbackTarget(cfg.URL)}
}

// dial opens one session, from its own source address when spreading.
func (r *LoadRun) dial(ctx context.Context) (*client.Conn, error) {
	var hc *http.Client
	if r.Spread {
		hc = client.HTTPClientFrom(SourceAddr(blockLoad, int(r.sources.Add(1))-1))
		defer hc.CloseIdleConnections()
	}
	ms := r.heartBeat.Milliseconds()
	return r.dialer.Dial(ctx, hc, fmt.Sprintf("%d,%d", ms, ms))
}

// startHeartBeats turns heart-beats on for the sessions dialed from now:
// CONNECT offers every both ways, and an EOL goes out on every session
// once per every, whatever else it sends, as stomp.js does. closeAll
// stops them.
func (r *LoadRun) startHeartBeats(every time.Duration) {
	r.heartBeat = every
	r.hbDone = make(chan struct{})
	r.hbWG.Add(1)
	go func() {
		defer r.hbWG.Done()
		heartBeats(r.hbDone, every, func(slot, slots int) []*client.Conn {
			r.mu.Lock()
			defer r.mu.Unlock()
			var due []*client.Conn
			for i := slot; i < len(r.conns); i += slots {
				due = append(due, r.conns[i])
			}
			return due
		})
	}()
}

func (r *LoadRun) track(c *client.Conn) {
	r.mu.Lock()
	r.conns = append(r.conns, c)
	r.mu.Unlock()
}

// CloseAll ends every connection; the readers then return.
func (r *LoadRun) CloseAll() {
	r.done.Store(true)
	if r.hbDone != nil {
		close(r.hbDone)
		r.hbWG.Wait()
		r.hbDone = nil
	}
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	r.readers.Wait()
}

// Parallel runs fn(i) for i in [0, n) with bounded concurrency and
// returns the first error; it stops starting new calls after an error or
// when ctx ends.
func Parallel(ctx context.Context, n, limit int, fn func(i int) error) error {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var (
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	for i := range n {
		if ctx.Err() != nil {
			fail(ctx.Err())
			break
		}
		sem <- struct{}{}
		if failed() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

// Subscribe opens a session for a subscriber of cls on dest and starts its
// reader.
func (r *LoadRun) Subscribe(ctx context.Context, cls *load.Class, id, dest string, latency bool) (*load.Subscriber, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s subscriber: %w", cls.Name, err)
	}
	r.track(c)
	if err := c.Subscribe(ctx, id, dest); err != nil {
		return nil, fmt.Errorf("%s subscriber: %w", cls.Name, err)
	}
	s := &load.Subscriber{Conn: c, Class: cls, Win: r.win}
	if latency {
		s.Hist = report.NewHistogram()
	}
	if r.SubSetup != nil {
		r.SubSetup(s)
	}
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		s.Run(r.Clock, &r.done)
	}()
	return s, nil
}

// Publish opens a session for a publisher of cls to dest. Its reader
// discards what the server sends (receipts, heart-beats, ERROR frames,
// which count as errors) so that control frames are answered.
func (r *LoadRun) Publish(ctx context.Context, cls *load.Class, idx uint32, dest string, size int) (*load.Publisher, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s publisher: %w", cls.Name, err)
	}
	r.track(c)
	// A discarding subscriber: a publisher subscribes to nothing, so
	// anything it reads that is not a MESSAGE is only checked for ERROR.
	sink := &load.Subscriber{Conn: c, Class: &load.Class{Name: cls.Name}}
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		sink.Run(r.Clock, &r.done)
		cls.Errors.Add(sink.Class.Errors.Load())
	}()
	return r.newPublisher(c, cls, idx, dest, size), nil
}

// newPublisher is newPublisher with the run's frames per message.
func (r *LoadRun) newPublisher(c *client.Conn, cls *load.Class, idx uint32, dest string, size int) *load.Publisher {
	p := load.NewPublisher(c, cls, idx, dest, size)
	p.PerMessage = r.perMessage
	return p
}

// join opens one session that subscribes to dest and publishes to it, a
// player in a room: it receives what every member sends, its own
// messages included. The subscriber records latency when latency is set.
func (r *LoadRun) join(ctx context.Context, cls *load.Class, idx uint32, dest string, size int, latency bool) (*load.Subscriber, *load.Publisher, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s member: %w", cls.Name, err)
	}
	r.track(c)
	if err := c.Subscribe(ctx, "0", dest); err != nil {
		return nil, nil, fmt.Errorf("%s member: %w", cls.Name, err)
	}
	s := &load.Subscriber{Conn: c, Class: cls}
	if latency {
		s.Hist = report.NewHistogram()
	}
	if r.SubSetup != nil {
		r.SubSetup(s)
	}
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		s.Run(r.Clock, &r.done)
	}()
	return s, r.newPublisher(c, cls, idx, dest, size), nil
}

// LoadResult is what Execute measured.
type LoadResult struct {
	loadSeconds    float64
	elapsedSeconds float64
	Interrupted    bool
	Classes        []report.ClassReport
	series         []report.Series
	server         *serverReport
	tool           toolReport
}

// Pace starts one goroutine per publisher of pubs, each sending at rate
// per second from start until end (publisher.runPaced), counted in wg:
// the launch of execute for every paced scenario.
func (r *LoadRun) Pace(ctx context.Context, pubs []*load.Publisher, start, end time.Time, rate float64, wg *sync.WaitGroup) {
	for _, p := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.RunPaced(ctx, r.Clock, start, end, rate)
		}()
	}
}

// Execute runs the publishers from a common start for cfg.Duration,
// samples once a second, drains, closes everything and measures.
// start(ctx, start, end, wg) launches the publishers.
func (r *LoadRun) Execute(ctx context.Context, launch func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup)) LoadResult {
	srv := newServerProbe(ctx, r.cfg)
	cpu0 := procstat.SelfCPU()

	var all []*report.CounterSeries
	var losses []*report.LossSeries
	for _, c := range r.Classes {
		all = append(all,
			&report.CounterSeries{Series: &report.Series{Name: report.SeriesLabel("delivered/s", c.Name), Group: c.Name}, Read: c.Delivered.Load},
			&report.CounterSeries{Series: &report.Series{Name: report.SeriesLabel("sent/s", c.Name), Group: c.Name, Style: report.StyleDashed}, Read: c.Sent.Load},
		)
		losses = append(losses, &report.LossSeries{Series: &report.Series{Name: report.SeriesLabel("undelivered/s", c.Name), Group: c.Name, Style: report.StyleDotted},
			Read: func() (int64, int64) { return c.Sent.Load() * c.Fanout, c.Delivered.Load() }})
	}

	start := time.Now().Add(startDelay)
	end := start.Add(r.cfg.Duration)
	pctx, cancelPubs := context.WithCancel(ctx)
	defer cancelPubs()
	var pubs sync.WaitGroup
	launch(pctx, start, end, &pubs)

	totals := func() (sent, delivered, expected, errs int64) {
		for _, c := range r.Classes {
			s := c.Sent.Load()
			sent += s
			expected += s * c.Fanout
			delivered += c.Delivered.Load()
			errs += c.Errors.Load()
		}
		return
	}
	smp := &report.Sampler{
		Prog: report.NewProgress(r.stderr, start, r.cfg.NoProgress),
		Fields: func() []report.ProgressField {
			s, d, e, errs := totals()
			// Undelivered is expected − delivered: in flight, or lost.
			return []report.ProgressField{{Name: "sent", Value: s}, {Name: "delivered", Value: d}, {Name: "undelivered", Value: max(e-d, 0)}, {Name: "errors", Value: errs}}
		},
	}
	for _, s := range all {
		smp.Series = append(smp.Series, s)
	}
	for _, l := range losses {
		smp.Series = append(smp.Series, l)
	}
	smp.Series = append(smp.Series, r.Sampled...)
	if r.win != nil {
		smp.Each = r.win.Tick
	}

	// Sample once a second over the load period.
	interrupted, stopped := smp.Loop(ctx, start, end, nil)
	loadEnd := end
	if interrupted {
		loadEnd = stopped
	}
	deliveredInLoad := make([]int64, len(r.Classes))
	for i, c := range r.Classes {
		deliveredInLoad[i] = c.Delivered.Load()
	}
	// Paced publishers end by themselves at the end of the load period,
	// after sending what is due; an interrupt stops them at once.
	if interrupted {
		cancelPubs()
	}
	if r.win != nil {
		r.win.Close()
	}
	pubs.Wait()

	// Drain what is still in flight.
	if !interrupted {
		r.drain(ctx, totals)
	}
	smp.Show(time.Now())
	smp.Prog.End()
	elapsed := time.Since(start)
	serverAfter := srv.finish(ctx)
	r.CloseAll()
	cpu := procstat.SelfCPU() - cpu0

	res := LoadResult{
		loadSeconds:    loadEnd.Sub(start).Seconds(),
		elapsedSeconds: report.Round3(elapsed.Seconds()),
		Interrupted:    interrupted,
		server:         serverAfter,
	}
	var msgs int64
	for i, c := range r.Classes {
		cr := c.Report(res.loadSeconds, deliveredInLoad[i])
		res.Classes = append(res.Classes, cr)
		msgs += cr.Sent + cr.Delivered
	}
	res.loadSeconds = report.Round3(res.loadSeconds)
	res.tool = ToolReportOf(cpu, msgs)
	for _, s := range all {
		res.series = append(res.series, *s.Series)
	}
	// A class's undelivered/s is drawn only when some of what it sent
	// never arrived (the flood's abusers); otherwise it is in-flight
	// noise.
	for i, l := range losses {
		if cr := res.Classes[i]; cr.Delivered < cr.Expected {
			res.series = append(res.series, *l.Series)
		}
	}
	if srv := res.server; srv != nil && srv.CPUSeconds > 0 {
		var delivered, sent int64
		for _, c := range res.Classes {
			delivered += c.Delivered
			sent += c.Sent
		}
		srv.CPUPerDeliveredMicros = report.PerMicros(srv.CPUSeconds, delivered)
		srv.CPUPerSentMicros = report.PerMicros(srv.CPUSeconds, sent)
	}
	return res
}

// drain waits until every expected delivery arrived, nothing arrived for
// drainQuiet, drainMax passed or ctx ended.
func (r *LoadRun) drain(ctx context.Context, totals func() (int64, int64, int64, int64)) {
	deadline := time.Now().Add(drainMax)
	_, lastD, _, _ := totals()
	lastChange := time.Now()
	t := time.NewTicker(settleTick)
	defer t.Stop()
	for {
		_, d, e, _ := totals()
		now := time.Now()
		if d >= e || now.After(deadline) || now.Sub(lastChange) >= drainQuiet {
			return
		}
		if d != lastD {
			lastD, lastChange = d, now
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// toolReport is the load generator's own cost.
type toolReport struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	// Messages counts SEND frames written plus MESSAGE frames read.
	Messages int64 `json:"messages"`
	// CPUPerMessageMicros is user+system CPU (getrusage RUSAGE_SELF) over
	// the load and the drain divided by Messages; the sessions' setup is
	// not included.
	CPUPerMessageMicros float64 `json:"cpu_per_message_us"`
}

// ToolReportOf is the tool's own cost: cpu over msgs messages (none when
// msgs is 0).
func ToolReportOf(cpu time.Duration, msgs int64) toolReport {
	return toolReport{
		CPUSeconds:          report.Round3(cpu.Seconds()),
		Messages:            msgs,
		CPUPerMessageMicros: report.PerMicros(cpu.Seconds(), msgs),
	}
}
