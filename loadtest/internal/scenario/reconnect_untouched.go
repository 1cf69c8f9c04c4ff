package scenario

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/stompframe"
)

// Latency phases of the untouched sessions.
const (
	phaseFill   int32 = iota // while A fills up: not recorded
	phaseBefore              // from A full until it was stopped
	phaseStorm               // from the stop until every session was back
	phaseAfter               // after that: not recorded
)

// maxUntouchedDials bounds the attempts to open one untouched session
// that B refuses with a Retry-After: enough for an admission burst ten
// times smaller than the sessions opened.
const maxUntouchedDials = 10

// untouched are the sessions held on B throughout a storm: each
// subscribes to a topic of its own and publishes to it at a steady rate,
// so that every message measures B's delivery while the storm lands.
type untouched struct {
	base  time.Time    // the clock the message stamps count from
	phase atomic.Int32 // the phase a message received now falls in

	// stormAt is when the storm phase began, as time since base; set
	// by startStorm before the phase changes.
	stormAt atomic.Int64

	mu     sync.Mutex // guards the histograms, the maxima and the counts below
	before *hdrhistogram.Histogram
	storm  *hdrhistogram.Histogram
	// stormMax is the highest latency received in each binWidth bin
	// of the storm, from stormAt: when the untouched sessions waited.
	stormMax []time.Duration
	// beforeServer, stormServer and stormTool are the server's and the
	// tool's parts of the latencies (kernel stamps), stormServerMax the
	// highest server part in each bin by the kernel's receive time.
	beforeServer, stormServer, stormTool *hdrhistogram.Histogram
	stormServerMax                       []time.Duration
	split, unsplit, clamped              int64

	opened       atomic.Int64
	disconnected atomic.Int64
	wg           sync.WaitGroup
}

// maxStormBins bounds stormMax: ten minutes of binWidth bins, longer
// than any storm's -duration that a report would chart.
const maxStormBins = 6000

func newUntouched() *untouched {
	return &untouched{base: time.Now(), before: report.NewHistogram(), storm: report.NewHistogram(),
		beforeServer: report.NewHistogram(), stormServer: report.NewHistogram(), stormTool: report.NewHistogram()}
}

// startStorm begins the storm phase now.
func (u *untouched) startStorm() {
	u.stormAt.Store(int64(time.Since(u.base)))
	u.phase.Store(phaseStorm)
}

// open dials n sessions to d from the untouched block of source
// addresses, subscribes each and starts its publisher (rate messages a
// second) and reader, which run until ctx ends. It returns the first
// error of a session that could not be set up.
func (u *untouched) open(ctx context.Context, d *client.Dialer, n int, rate float64, topicPrefix string) error {
	return Parallel(ctx, n, DialConcurrency, func(i int) error {
		hc := client.HTTPClientFrom(SourceAddr(blockUntouched, i))
		// B's admission may refuse some of them at once (a burst under
		// the number opened): those come back when told, as any client.
		var bo client.Backoff
		c, err := d.Dial(ctx, hc, "0,0")
		for n := 1; err != nil && client.RetryAfter(err) > 0 && n < maxUntouchedDials; n++ {
			if !sleepCtx(ctx, bo.Next(client.RetryAfter(err))) {
				break
			}
			c, err = d.Dial(ctx, hc, "0,0")
		}
		if err != nil {
			return fmt.Errorf("untouched session %d: %w", i, err)
		}
		dest := topicPrefix + "storm.untouched." + strconv.Itoa(i)
		if err := c.Subscribe(ctx, "u", dest); err != nil {
			c.Close()
			return fmt.Errorf("untouched session %d: %w", i, err)
		}
		u.opened.Add(1)
		u.wg.Add(2)
		go u.read(ctx, c, hc)
		go u.publish(ctx, c, dest, rate)
		return nil
	})
}

// publish sends a stamped SEND to dest every 1/rate s, starting at a
// random phase so that the sessions do not publish in step.
func (u *untouched) publish(ctx context.Context, c *client.Conn, dest string, rate float64) {
	defer u.wg.Done()
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(every))))
	defer t.Stop()
	var b []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		t.Reset(every)
		b = append(b[:0], "SEND\ndestination:"...)
		b = append(b, dest...)
		b = append(b, "\ncontent-type:text/plain\n\nT"...)
		b = strconv.AppendInt(b, int64(time.Since(u.base)), 10)
		b = append(b, 0)
		if err := c.Write(ctx, b); err != nil {
			return
		}
	}
}

// read records the latency of every MESSAGE until ctx ends or the
// server ends the session, which counts as a disconnection.
func (u *untouched) read(ctx context.Context, c *client.Conn, hc *http.Client) {
	defer u.wg.Done()
	defer c.Close()
	defer hc.CloseIdleConnections()
	for {
		msg, err := c.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				u.disconnected.Add(1)
			}
			return
		}
		readAt := time.Now()
		now := readAt.Sub(u.base)
		kernel, kernelOK := c.Stamps.Last()
		c.Decoder.Feed(msg)
		for {
			f, err := c.Decoder.Next()
			if err != nil || f == nil {
				break
			}
			if f.Command != stompframe.CommandMessage || len(f.Body) < 2 || f.Body[0] != 'T' {
				continue
			}
			sent, err := strconv.ParseInt(string(f.Body[1:]), 10, 64)
			if err != nil {
				continue
			}
			smp, clamped := load.SplitLatency(now-time.Duration(sent), readAt, kernel, kernelOK)
			u.record(now, smp, clamped)
		}
	}
}

// record counts the latency s of a message read at now (time since
// base), split by the kernel's receive time when s.Split.
func (u *untouched) record(now time.Duration, s load.Sample, clamped bool) {
	var h, hs *hdrhistogram.Histogram
	phase := u.phase.Load()
	switch phase {
	case phaseBefore:
		h, hs = u.before, u.beforeServer
	case phaseStorm:
		h, hs = u.storm, u.stormServer
	default:
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	report.RecordMicros(h, s.Total.Microseconds())
	if s.Split {
		u.split++
		if clamped {
			u.clamped++
		}
		report.RecordMicros(hs, s.Server.Microseconds())
	} else {
		u.unsplit++
	}
	if phase != phaseStorm {
		return
	}
	stormAt := time.Duration(u.stormAt.Load())
	u.stormMax = growMax(u.stormMax, now-stormAt, s.Total)
	if s.Split {
		report.RecordMicros(u.stormTool, s.Tool.Microseconds())
		// The message reached the socket s.Tool before it was read.
		u.stormServerMax = growMax(u.stormServerMax, now-s.Tool-stormAt, s.Server)
	}
}

// growMax raises the bin of at (from the storm's start) in m to d when
// d is higher, growing m as needed; at outside the bins changes nothing.
func growMax(m []time.Duration, at, d time.Duration) []time.Duration {
	bin := int(at / binWidth)
	if at < 0 || bin >= maxStormBins {
		return m
	}
	for len(m) <= bin {
		m = append(m, 0)
	}
	m[bin] = max(m[bin], d)
	return m
}

// summary returns the report of the sessions once they have ended.
func (u *untouched) summary() untouchedReport {
	u.mu.Lock()
	defer u.mu.Unlock()
	r := untouchedReport{Sessions: int(u.opened.Load()), Disconnected: int(u.disconnected.Load())}
	if u.before.TotalCount() > 0 {
		r.Before = report.Summarize(u.before)
	}
	if u.storm.TotalCount() > 0 {
		r.Storm = report.Summarize(u.storm)
	}
	r.StormMaxPer100ms = msOf(u.stormMax)
	r.Split, r.Unsplit, r.Clamped = u.split, u.unsplit, u.clamped
	if u.split > 0 {
		if u.beforeServer.TotalCount() > 0 {
			r.BeforeServer = report.Summarize(u.beforeServer)
		}
		if u.stormServer.TotalCount() > 0 {
			r.StormServer = report.Summarize(u.stormServer)
			r.StormTool = report.Summarize(u.stormTool)
		}
		r.StormServerMaxPer100ms = msOf(u.stormServerMax)
	}
	return r
}

// msOf converts durations to milliseconds for the report.
func msOf(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = report.Round3(float64(d.Microseconds()) / 1000)
	}
	return out
}
