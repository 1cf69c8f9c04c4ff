package attack

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
)

// The attacks in this file abuse the server through connections it keeps:
// HTTP connections left idle, sessions that go silent, and many sessions
// from one client.

// httpIdleAttack: one client opens many keep-alive HTTP connections,
// makes one request on each, and leaves them idle.
type httpIdleAttack struct{ env *attackEnv }

// maxHTTPBody bounds the response body read per request.
const maxHTTPBody = 1 << 20

func (a *httpIdleAttack) prepare(context.Context) error { return nil }

// httpTarget returns the address to dial and the TLS config (nil for ws)
// of the target's HTTP side.
func httpTarget(wsURL string) (addr string, tlsCfg *tls.Config, host string, err error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "", nil, "", err
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "wss" {
			port = "443"
		}
	}
	if u.Scheme == "wss" {
		tlsCfg = &tls.Config{ServerName: u.Hostname()}
	}
	return net.JoinHostPort(u.Hostname(), port), tlsCfg, u.Host, nil
}

func (a *httpIdleAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	addr, tlsCfg, host, err := httpTarget(cfg.URL)
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
		return rep
	}
	d := &net.Dialer{Timeout: client.DialTimeout}
	if local := a.env.oneClient(); local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: stompgate-loadtest\r\n\r\n", cfg.httpPath, host)
	var (
		mu       sync.Mutex
		conns    []net.Conn // guarded by mu
		notes    noteList
		opened   atomic.Int64
		closed   atomic.Int64
		failed   atomic.Int64
		statuses sync.Map // status code → *atomic.Int64
		watchers sync.WaitGroup
		ending   atomic.Bool
	)
	note := notes.add
	if !sleepUntil(ctx, start) {
		return rep
	}
	octx, cancel := context.WithDeadline(ctx, end)
	_ = scenario.Parallel(octx, cfg.httpConns, scenario.DialConcurrency, func(int) error {
		c, err := d.DialContext(octx, "tcp", addr)
		if err != nil {
			failed.Add(1)
			note("dial: " + err.Error())
			return nil
		}
		if tlsCfg != nil {
			c = tls.Client(c, tlsCfg)
		}
		br := bufio.NewReader(c)
		_ = c.SetDeadline(time.Now().Add(client.DialTimeout))
		resp, err := func() (*http.Response, error) {
			if _, err := io.WriteString(c, req); err != nil {
				return nil, err
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHTTPBody))
			resp.Body.Close()
			return resp, err
		}()
		if err != nil {
			c.Close()
			failed.Add(1)
			note("request: " + err.Error())
			return nil
		}
		_ = c.SetDeadline(time.Time{})
		n, _ := statuses.LoadOrStore(resp.StatusCode, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		opened.Add(1)
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		// The connection is idle from here; a read returns when the
		// server closes it.
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			var b [1]byte
			if _, err := br.Read(b[:]); err != nil && !ending.Load() {
				closed.Add(1)
			}
		}()
		return nil
	})
	cancel()
	sleepUntil(ctx, end)
	rep.Sessions = int(opened.Load())
	rep.FramesWritten = opened.Load()
	rep.ClosedByServer = int(closed.Load())
	rep.Open = rep.Sessions - rep.ClosedByServer
	rep.Refused = failed.Load()
	if rep.ClosedByServer > 0 {
		rep.Closes = map[string]int{"HTTP connection closed by the server": rep.ClosedByServer}
	}
	ending.Store(true)
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	rep.Notes = notes.all()
	watchers.Wait()
	codes := ""
	statuses.Range(func(k, v any) bool {
		codes += fmt.Sprintf(" %d×%d", v.(*atomic.Int64).Load(), k)
		return true
	})
	rep.Figures = map[string]float64{figOpenAtEnd: float64(rep.Open)}
	rep.Summary = fmt.Sprintf("one client opened %d keep-alive HTTP connections (answers:%s), one GET %s each, then idled: %d still open after %.1fs",
		rep.Sessions, codes, cfg.httpPath, rep.Open, time.Since(start).Seconds())
	return rep
}

// silentAttack: sessions negotiate no heart-beats (or, as silent-hb,
// offer to send them every 24.8 days, the most a header allows), then
// neither send nor read, so they answer no WebSocket ping either.
type silentAttack struct {
	env *attackEnv
	atk *attackers
	// heartBeat is the CONNECT's offer: "0,0", or hugeHeartBeat.
	heartBeat string
}

// hugeHeartBeat offers client heart-beats every 2^31-1 ms: a server that
// takes it at its word checks the session in 24.8 days.
const hugeHeartBeat = "2147483647,0"

func (a *silentAttack) prepare(context.Context) error {
	a.atk = newAttackers(a.env)
	return nil
}

func (a *silentAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	var rep attackerReport
	if sleepUntil(ctx, start) {
		if _, err := a.atk.openMany(ctx, a.env.cfg.silentSessions, a.heartBeat, false); err != nil {
			a.atk.note("open: " + err.Error())
		}
	}
	sleepUntil(ctx, end)
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Figures = map[string]float64{figOpenAtEnd: float64(rep.Open)}
	rep.Summary = fmt.Sprintf("%d sessions with heart-beat %s, silent and never reading: %d still open after %.1fs",
		rep.Sessions, a.heartBeat, rep.Open, end.Sub(start).Seconds())
	return rep
}

// perIPAttack: one client IP opens sessions as fast as the server lets it
// and has every one publish into one subscriber. A per-IP session cap C
// bounds what gets through to C × the send limit.
type perIPAttack struct {
	env      *attackEnv
	atk      *attackers
	observer *load.Subscriber
	cls      *load.Class
}

// perIPBody is the size of the attack's message bodies: small, so the
// measure is messages, not bytes.
const perIPBody = 32

// perIPTail is the span at the end of the attack over which the
// delivered rate is taken: by then the client holds all the sessions it
// will.
const perIPTail = 2 * time.Second

func (a *perIPAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	a.cls = &load.Class{Name: "per-ip"}
	var err error
	a.observer, err = a.env.run.Subscribe(ctx, a.cls, "0", a.env.dest("per-ip"), false)
	return err
}

// heldSample is the count of sessions held and messages delivered at one
// instant.
type heldSample struct {
	at        time.Time
	held      int
	delivered int64
}

func (a *perIPAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	if !sleepUntil(ctx, start) {
		return rep
	}
	local := a.env.oneClient()
	dest := a.env.dest("per-ip")
	actx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var (
		pubs     sync.WaitGroup
		mu       sync.Mutex
		sessions []*attackSession // guarded by mu
	)
	held := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range sessions {
			if !s.sink.Gone.Load() {
				n++
			}
		}
		return n
	}
	// Sessions open one after another, each retrying 429s, from one
	// address: the server's limiters, not the tool, set the pace.
	var opener sync.WaitGroup
	opener.Add(1)
	go func() {
		defer opener.Done()
		for k := 0; actx.Err() == nil; k++ {
			s, err := a.atk.open(actx, local, "0,0", true)
			if err != nil {
				if actx.Err() == nil {
					a.atk.note("open: " + err.Error())
					sleepUntil(actx, time.Now().Add(retryPause))
				}
				continue
			}
			mu.Lock()
			sessions = append(sessions, s)
			mu.Unlock()
			p := load.NewPublisher(s.conn, a.cls, uint32(k), dest, perIPBody)
			pubs.Add(1)
			go func() {
				defer pubs.Done()
				p.RunPaced(actx, a.env.run.Clock, time.Now(), end, cfg.perIPRate)
			}()
		}
	}()
	var samples []heldSample
	peak := 0
	tick := time.NewTicker(time.Second)
	for done := false; !done; {
		select {
		case <-actx.Done():
			done = true
		case <-tick.C:
		}
		h := held()
		peak = max(peak, h)
		samples = append(samples, heldSample{at: time.Now(), held: h, delivered: a.observer.Delivered.Load()})
	}
	tick.Stop()
	opener.Wait()
	pubs.Wait()
	a.atk.outcome(&rep)
	a.atk.closeAll()

	last := samples[len(samples)-1]
	first := samples[0]
	for _, s := range samples {
		if last.at.Sub(s.at) <= perIPTail {
			first = s
			break
		}
	}
	endRate := 0.0
	if first.at.Before(last.at) {
		endRate = report.Round3(float64(last.delivered-first.delivered) / last.at.Sub(first.at).Seconds())
	}
	avg := perSecond(last.delivered, last.at.Sub(start))
	rep.Figures = map[string]float64{
		figSessionsHeld: float64(last.held), figSessionsPeak: float64(peak),
		figDeliveredEnd: endRate, figDeliveredAvg: avg, figHandshakeTrials: float64(int64(rep.Sessions) + rep.Refused),
	}
	rep.FramesWritten += a.cls.Sent.Load()
	rep.Summary = fmt.Sprintf("one IP held %d sessions at the end (peak %d), each trying %g SEND/s into one subscriber: %.1f msg/s delivered over the last %v (%.1f on average)",
		last.held, peak, cfg.perIPRate, endRate, perIPTail, avg)
	return rep
}
