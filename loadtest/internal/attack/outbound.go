package attack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// Slow-readers sizes, each with its reason.
const (
	// defaultSlowReaders is the attack as first measured: 100 sessions of
	// one address.
	defaultSlowReaders = 100
	// defaultSlowPublishers publish at the send limit, each message to
	// one reader's own topic in turn, so that no two sessions share a
	// queued message and what the server holds is real memory: 30 give
	// each reader about 360 KB/s, 18 times what it reads. Each reader's
	// backlog stays under the 4 MiB per-session bound for the 10 s of an
	// attack while all of them together pass 256 MiB.
	defaultSlowPublishers = 30
	// defaultSlowMessage is the attack's message size: close to the
	// 64 KiB frame limit.
	defaultSlowMessage = 60_000
	// defaultSlowReadRate and defaultSlowReadBuffer are each reader's
	// pace and socket receive buffer: 20 KB/s through 4 KB, a client that
	// reads, slowly, so that it is not dead to the server.
	defaultSlowReadRate   = 20_000
	defaultSlowReadBuffer = 4096
	// slowScrapeEvery is how often the attack reads the server's
	// outbound total from its metrics.
	slowScrapeEvery = 500 * time.Millisecond
)

// Figures of the slow-readers attack.
const (
	figQueuedPeak     = "outbound_queued_peak_bytes"
	figOutboundBudget = "outbound_budget_bytes"
	figOutboundSheds  = "outbound_budget_sheds"
	figReaderMessages = "reader_messages"
)

// httpClientBuffered is httpClientFrom with each connection's socket
// receive buffer set to rcvbuf bytes, as a client on a small buffer has.
func httpClientBuffered(local netip.Addr, rcvbuf int) *http.Client {
	d := &net.Dialer{Timeout: client.DialTimeout}
	if local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(rcvbuf)
			}
			return c, err
		},
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Second,
	}}
}

// slowReadersAttack: many sessions on small receive buffers read slowly
// while large messages arrive for each of them faster than it reads, so
// that every one holds a backlog under its own bound and all of them
// together hold far more. The server-wide outbound budget must close the
// largest backlogs; the socket send-buffer cap keeps the kernel from
// holding megabytes per socket besides.
type slowReadersAttack struct {
	env     *attackEnv
	readers *attackers // on small buffers, paced
	pubs    *attackers
	cls     *load.Class // counts what the readers got
	topics  []string
}

func (a *slowReadersAttack) prepare(ctx context.Context) error {
	cfg := a.env.cfg
	a.readers, a.pubs = newAttackers(a.env), newAttackers(a.env)
	a.readers.rcvbuf = cfg.slowReadBuffer
	a.cls = &load.Class{Name: "slow-reader"}
	a.topics = make([]string, cfg.slowReaders)
	for i := range a.topics {
		a.topics[i] = a.env.dest("slow-readers." + strconv.Itoa(i))
	}
	err := scenario.Parallel(ctx, cfg.slowReaders, scenario.DialConcurrency, func(i int) error {
		s, err := a.readers.open(ctx, a.env.nextSource(), "0,0", false)
		if err != nil {
			return err
		}
		if err := s.conn.Subscribe(ctx, "0", a.topics[i]); err != nil {
			return err
		}
		a.startSlowSink(s, int64(cfg.slowReadRate))
		return nil
	})
	if err != nil {
		return fmt.Errorf("slow readers: %w", err)
	}
	if _, err := a.pubs.openMany(ctx, cfg.slowPublishers, "0,0", true); err != nil {
		return fmt.Errorf("slow-readers publishers: %w", err)
	}
	return nil
}

// startSlowSink starts reading s at rate bytes per second, counting its
// MESSAGEs in a.cls, and noticing the server's close.
func (a *slowReadersAttack) startSlowSink(s *attackSession, rate int64) {
	s.sink = &load.Subscriber{Conn: s.conn, Class: a.cls, ReadBPS: rate}
	a.readers.readers.Add(1)
	go func() {
		defer a.readers.readers.Done()
		s.sink.Run(a.env.run.Clock, &a.readers.done)
	}()
}

func (a *slowReadersAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	body := make([]byte, cfg.slowMessage)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	frames := make([][]byte, len(a.topics))
	for i, t := range a.topics {
		frames[i] = append(append([]byte("SEND\ndestination:"+t+"\ncontent-type:text/plain\n\n"), body...), 0)
	}
	a.pubs.mu.Lock()
	pubs := append([]*attackSession(nil), a.pubs.sessions...)
	a.pubs.mu.Unlock()

	var wg sync.WaitGroup
	for j, s := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := j * len(frames) / max(len(pubs), 1)
			paceUntil(ctx, start, end, float64(cfg.sendLimit), func(n int64) error {
				for range n {
					if err := a.pubs.write(s, websocket.MessageText, frames[next%len(frames)], 1); err != nil {
						return err
					}
					next++
				}
				return nil
			})
		}()
	}
	peak, budget, sheds, scraped := a.watchOutbound(ctx, start, end)
	wg.Wait()

	a.readers.outcome(&rep)
	var pubRep attackerReport
	a.pubs.outcome(&pubRep)
	a.readers.closeAll()
	a.pubs.closeAll()
	rep.FramesWritten = pubRep.FramesWritten
	rep.Notes = append(rep.Notes, pubRep.Notes...)
	rep.Figures = map[string]float64{figOpenAtEnd: float64(rep.Open), figReaderMessages: float64(a.cls.Delivered.Load())}
	rep.Summary = fmt.Sprintf("%d readers on %d-byte receive buffers reading %d B/s, %d publishers sending %d-byte messages at %d/s to the readers in turn (%d SENDs): %d readers still open after %.1fs",
		rep.Sessions, cfg.slowReadBuffer, cfg.slowReadRate, len(pubs), cfg.slowMessage, cfg.sendLimit, rep.FramesWritten, rep.Open, end.Sub(start).Seconds())
	if scraped {
		rep.Figures[figQueuedPeak], rep.Figures[figOutboundBudget], rep.Figures[figOutboundSheds] = peak, budget, sheds
		rep.Summary += fmt.Sprintf("; server's outbound total peaked at %.1f MiB (budget %.0f MiB), %.0f sessions shed for it", scenario.MiB(int64(peak)), scenario.MiB(int64(budget)), sheds)
	}
	return rep
}

// judgeSlowReaders adds the slow-readers target: the server's outbound
// total stays within its budget plus one message per reader.
func (r *abuseReport) judgeSlowReaders(cfg *abuseConfig) {
	const target = "slow-readers keeps the server's outbound total within its budget plus one message per reader"
	a := r.find(attackSlowReaders)
	if a == nil {
		r.Targets = append(r.Targets, targetResult{Target: target, Status: "n/a", Detail: "not run"})
		return
	}
	peak, ok := a.Attacker.Figures[figQueuedPeak]
	budget := a.Attacker.Figures[figOutboundBudget]
	status, detail := "pass", ""
	switch {
	case !ok:
		status, detail = "n/a", "the server's outbound metrics were not read: give -metrics-url of a server that has them"
	case budget == 0:
		status, detail = "fail", fmt.Sprintf("the server has no outbound budget; its total peaked at %.1f MiB", scenario.MiB(int64(peak)))
	default:
		bound := budget + float64(a.Attacker.Sessions)*float64(cfg.slowMessage+1024)
		if peak > bound {
			status = "fail"
		}
		detail = fmt.Sprintf("peak %.1f MiB, budget %.0f MiB (%.1f MiB with a message per reader), %.0f sessions shed, %d of %d readers open at the end",
			scenario.MiB(int64(peak)), scenario.MiB(int64(budget)), scenario.MiB(int64(bound)), a.Attacker.Figures[figOutboundSheds], a.Attacker.Open, a.Attacker.Sessions)
	}
	r.Targets = append(r.Targets, targetResult{Target: target, Status: status, Detail: detail})
}

// watchOutbound reads the server's outbound figures from its metrics
// until end: the peak of stompgate_outbound_queued_bytes, the budget and
// the sessions shed during the attack. scraped is false when the metrics
// could not be read or do not have them.
func (a *slowReadersAttack) watchOutbound(ctx context.Context, start, end time.Time) (peak, budget, sheds float64, scraped bool) {
	url := a.env.cfg.MetricsEndpoint()
	if url == "" {
		sleepUntil(ctx, end)
		return 0, 0, 0, false
	}
	shedsAtStart := -1.0
	for {
		if s, err := scrape.Fetch(ctx, url); err == nil && s.Has("stompgate_outbound_queued_bytes") {
			scraped = true
			peak = max(peak, s.Sum("stompgate_outbound_queued_bytes"))
			budget = s.Sum("stompgate_outbound_budget_bytes")
			if shedsAtStart < 0 {
				shedsAtStart = s.Sum("stompgate_outbound_budget_sheds_total")
			}
			sheds = s.Sum("stompgate_outbound_budget_sheds_total") - shedsAtStart
		}
		next := time.Now().Add(slowScrapeEvery)
		if next.After(end) {
			next = end
		}
		if !time.Now().Before(end) || !sleepUntil(ctx, next) {
			return peak, budget, sheds, scraped
		}
	}
}
