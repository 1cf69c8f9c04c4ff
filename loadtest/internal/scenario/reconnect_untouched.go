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

	mu     sync.Mutex // guards before, storm and stormMax
	before *hdrhistogram.Histogram
	storm  *hdrhistogram.Histogram
	// stormMax is the highest latency received in each binWidth bin
	// of the storm, from stormAt: when the untouched sessions waited.
	stormMax []time.Duration

	opened       atomic.Int64
	disconnected atomic.Int64
	wg           sync.WaitGroup
}

// maxStormBins bounds stormMax: ten minutes of binWidth bins, longer
// than any storm's -duration that a report would chart.
const maxStormBins = 6000

func newUntouched() *untouched {
	return &untouched{base: time.Now(), before: report.NewHistogram(), storm: report.NewHistogram()}
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
		now := time.Since(u.base)
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
			u.record(now, now-time.Duration(sent))
		}
	}
}

// record counts a latency d of a message received at now (time since
// base).
func (u *untouched) record(now, d time.Duration) {
	var h *hdrhistogram.Histogram
	phase := u.phase.Load()
	switch phase {
	case phaseBefore:
		h = u.before
	case phaseStorm:
		h = u.storm
	default:
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	report.RecordMicros(h, d.Microseconds())
	if phase != phaseStorm {
		return
	}
	bin := int((now - time.Duration(u.stormAt.Load())) / binWidth)
	if bin < 0 || bin >= maxStormBins {
		return
	}
	for len(u.stormMax) <= bin {
		u.stormMax = append(u.stormMax, 0)
	}
	u.stormMax[bin] = max(u.stormMax[bin], d)
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
	r.StormMaxPer100ms = make([]float64, len(u.stormMax))
	for i, d := range u.stormMax {
		r.StormMaxPer100ms[i] = report.Round3(float64(d.Microseconds()) / 1000)
	}
	return r
}
