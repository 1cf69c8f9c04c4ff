package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Run phases' bounds, each with its reason.
const (
	// dialConcurrency bounds simultaneous dials, so that the server's
	// accept path, not a thundering herd, sets the pace.
	dialConcurrency = 50
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

// loadRun is a flood or throughput run: classes of publishers and
// subscribers, sampled once a second, drained, then reported.
type loadRun struct {
	cfg     *common
	stderr  io.Writer
	dialer  *dialer
	ck      clock
	classes []*class
	win     *window // unpaced publishers only

	sources atomic.Int64 // source addresses handed out
	spread  bool         // hand out source addresses at all

	done    atomic.Bool // set before the connections are closed
	readers sync.WaitGroup
	// subSetup, when set, adjusts each subscriber before its reader
	// starts (the abuse scenario's browser-like, slow-link readers).
	subSetup func(*subscriber)

	mu    sync.Mutex
	conns []*stompConn // guarded by mu
}

func newLoadRun(cfg *common, stderr io.Writer) *loadRun {
	return &loadRun{cfg: cfg, stderr: stderr, dialer: newDialer(cfg), ck: clock{base: time.Now()},
		spread: cfg.spread && loopbackTarget(cfg.url)}
}

// dial opens one session, from its own source address when spreading.
func (r *loadRun) dial(ctx context.Context) (*stompConn, error) {
	var client *http.Client
	if r.spread {
		client = httpClientFrom(sourceAddr(blockLoad, int(r.sources.Add(1))-1))
		defer client.CloseIdleConnections()
	}
	return r.dialer.dial(ctx, client, "0,0")
}

func (r *loadRun) track(c *stompConn) {
	r.mu.Lock()
	r.conns = append(r.conns, c)
	r.mu.Unlock()
}

// closeAll ends every connection; the readers then return.
func (r *loadRun) closeAll() {
	r.done.Store(true)
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	r.readers.Wait()
}

// parallel runs fn(i) for i in [0, n) with bounded concurrency and
// returns the first error; it stops starting new calls after an error or
// when ctx ends.
func parallel(ctx context.Context, n, limit int, fn func(i int) error) error {
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

// subscribe opens a session for a subscriber of cls on dest and starts its
// reader.
func (r *loadRun) subscribe(ctx context.Context, cls *class, id, dest string, latency bool) (*subscriber, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s subscriber: %w", cls.name, err)
	}
	r.track(c)
	if err := c.subscribe(ctx, id, dest); err != nil {
		return nil, fmt.Errorf("%s subscriber: %w", cls.name, err)
	}
	s := &subscriber{conn: c, cls: cls, win: r.win}
	if latency {
		s.hist = newHistogram()
	}
	if r.subSetup != nil {
		r.subSetup(s)
	}
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		s.run(r.ck, &r.done)
	}()
	return s, nil
}

// publish opens a session for a publisher of cls to dest. Its reader
// discards what the server sends (receipts, heart-beats, ERROR frames,
// which count as errors) so that control frames are answered.
func (r *loadRun) publish(ctx context.Context, cls *class, idx uint32, dest string, size int) (*publisher, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s publisher: %w", cls.name, err)
	}
	r.track(c)
	// A discarding subscriber: a publisher subscribes to nothing, so
	// anything it reads that is not a MESSAGE is only checked for ERROR.
	sink := &subscriber{conn: c, cls: &class{name: cls.name}}
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		sink.run(r.ck, &r.done)
		cls.errors.Add(sink.cls.errors.Load())
	}()
	return newPublisher(c, cls, idx, dest, size), nil
}

// loadResult is what execute measured.
type loadResult struct {
	loadSeconds    float64
	elapsedSeconds float64
	interrupted    bool
	classes        []classReport
	series         []series
	server         *serverReport
	tool           toolReport
}

// execute runs the publishers from a common start for cfg.duration,
// samples once a second, drains, closes everything and measures.
// start(ctx, start, end, wg) launches the publishers.
func (r *loadRun) execute(ctx context.Context, launch func(ctx context.Context, start, end time.Time, wg *sync.WaitGroup)) loadResult {
	srv := newServerProbe(ctx, r.cfg)
	cpu0 := selfCPU()

	var all []*counterSeries
	for _, c := range r.classes {
		all = append(all,
			&counterSeries{s: &series{Name: seriesLabel("delivered/s", c.name)}, read: c.delivered.Load},
			&counterSeries{s: &series{Name: seriesLabel("sent/s", c.name), Dashed: true}, read: c.sent.Load},
		)
	}

	start := time.Now().Add(startDelay)
	end := start.Add(r.cfg.duration)
	pctx, cancelPubs := context.WithCancel(ctx)
	defer cancelPubs()
	var pubs sync.WaitGroup
	launch(pctx, start, end, &pubs)

	prog := &progress{start: start}
	if !r.cfg.noProgress {
		prog.w = r.stderr
	}
	totals := func() (sent, delivered, expected, errs int64) {
		for _, c := range r.classes {
			s := c.sent.Load()
			sent += s
			expected += s * c.fanout
			delivered += c.delivered.Load()
			errs += c.errors.Load()
		}
		return
	}
	show := func(now time.Time) {
		s, d, e, errs := totals()
		prog.line(now, s, d, max(e-d, 0), errs, "")
	}

	// Sample once a second over the load period.
	interrupted := false
	time.Sleep(time.Until(start))
	tick := time.NewTicker(time.Second)
	last := start
	deliveredInLoad := make([]int64, len(r.classes))
	loadEnd := end
sampling:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			loadEnd = time.Now()
			break sampling
		case now := <-tick.C:
			for _, s := range all {
				s.sample(now.Sub(last))
			}
			last = now
			if r.win != nil {
				r.win.tick()
			}
			show(now)
			if !now.Before(end) {
				break sampling
			}
		}
	}
	tick.Stop()
	for i, c := range r.classes {
		deliveredInLoad[i] = c.delivered.Load()
	}
	// Paced publishers end by themselves at the end of the load period,
	// after sending what is due; an interrupt stops them at once.
	if interrupted {
		cancelPubs()
	}
	if r.win != nil {
		r.win.close()
	}
	pubs.Wait()

	// Drain what is still in flight.
	if !interrupted {
		r.drain(ctx, totals)
	}
	show(time.Now())
	prog.end()
	elapsed := time.Since(start)
	serverAfter := srv.finish(ctx)
	r.closeAll()
	cpu := selfCPU() - cpu0

	res := loadResult{
		loadSeconds:    loadEnd.Sub(start).Seconds(),
		elapsedSeconds: round3(elapsed.Seconds()),
		interrupted:    interrupted,
		server:         serverAfter,
	}
	var msgs int64
	for i, c := range r.classes {
		cr := c.report(res.loadSeconds, deliveredInLoad[i])
		res.classes = append(res.classes, cr)
		msgs += cr.Sent + cr.Delivered
	}
	res.loadSeconds = round3(res.loadSeconds)
	res.tool = toolReportOf(cpu, msgs)
	for _, s := range all {
		res.series = append(res.series, *s.s)
	}
	if srv := res.server; srv != nil && srv.CPUSeconds > 0 {
		var delivered, sent int64
		for _, c := range res.classes {
			delivered += c.Delivered
			sent += c.Sent
		}
		srv.CPUPerDeliveredMicros = perMicros(srv.CPUSeconds, delivered)
		srv.CPUPerSentMicros = perMicros(srv.CPUSeconds, sent)
	}
	return res
}

// drain waits until every expected delivery arrived, nothing arrived for
// drainQuiet, drainMax passed or ctx ended.
func (r *loadRun) drain(ctx context.Context, totals func() (int64, int64, int64, int64)) {
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
	// the run divided by Messages, setup included.
	CPUPerMessageMicros float64 `json:"cpu_per_message_us"`
}

func toolReportOf(cpu time.Duration, msgs int64) toolReport {
	return toolReport{
		CPUSeconds:          round3(cpu.Seconds()),
		Messages:            msgs,
		CPUPerMessageMicros: perMicros(cpu.Seconds(), msgs),
	}
}

// perMicros is seconds/n in microseconds, 0 when n is 0.
func perMicros(seconds float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return round3(seconds * 1e6 / float64(n))
}
