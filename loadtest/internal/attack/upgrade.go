package attack

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// upgradeFloodAttack: one client address on many keep-alive connections
// sends WebSocket upgrade requests back to back (each refused 429, each a
// limiter decision), while honest clients on other addresses each make
// one handshake. The server's handshake limiter must neither crowd the
// honest clients out nor admit the flooding address beyond its limit.
type upgradeFloodAttack struct{ env *attackEnv }

// Figures of upgrade-flood.
const (
	figFloodAdmitted = "flood_admitted"
	figFloodRefused  = "flood_refused"
	figFloodLimit    = "flood_limit"
	figHonestTried   = "honest_handshakes"
	figHonestOK      = "honest_handshakes_ok"
)

// upgradeHonestEvery paces the honest handshakes: 20 a second, each from
// an address of its own.
const upgradeHonestEvery = 50 * time.Millisecond

func (a *upgradeFloodAttack) prepare(context.Context) error { return nil }

// upgradeRequest is a WebSocket upgrade request for the target's path.
func upgradeRequest(wsURL, host string) string {
	path := "/ws"
	if u, err := url.Parse(wsURL); err == nil && u.Path != "" {
		path = u.Path
	}
	return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v12.stomp\r\n" +
		"User-Agent: stompgate-loadtest\r\n\r\n"
}

// upgradeOnce sends req on a new connection from local and reports the
// status.
func upgradeOnce(ctx context.Context, addr string, tlsCfg *tls.Config, local netip.Addr, req string) (int, error) {
	d := &net.Dialer{Timeout: client.DialTimeout}
	if local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if tlsCfg != nil {
		c = tls.Client(c, tlsCfg)
	}
	_ = c.SetDeadline(time.Now().Add(client.DialTimeout))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (a *upgradeFloodAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	addr, tlsCfg, host, err := httpTarget(cfg.URL)
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
		return rep
	}
	req := upgradeRequest(cfg.URL, host)
	local := a.env.oneClient()
	if !sleepUntil(ctx, start) {
		return rep
	}
	fctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var (
		admitted, refused, failed atomic.Int64
		conns, serverClosed       atomic.Int64
		notes                     noteList
		wg                        sync.WaitGroup
	)
	note := notes.add
	for range cfg.floodConns {
		wg.Go(func() {
			d := &net.Dialer{Timeout: client.DialTimeout}
			if local.IsValid() {
				d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
			}
			for fctx.Err() == nil {
				c, err := d.DialContext(fctx, "tcp", addr)
				if err != nil {
					if fctx.Err() == nil {
						failed.Add(1)
						note("flood dial: " + err.Error())
						sleepUntil(fctx, time.Now().Add(retryPause))
					}
					continue
				}
				conns.Add(1)
				if tlsCfg != nil {
					c = tls.Client(c, tlsCfg)
				}
				stop := context.AfterFunc(fctx, func() { _ = c.Close() })
				br := bufio.NewReader(c)
				for fctx.Err() == nil {
					if _, err := io.WriteString(c, req); err != nil {
						break
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						if fctx.Err() == nil {
							serverClosed.Add(1)
						}
						break
					}
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxHTTPBody))
					resp.Body.Close()
					if resp.StatusCode == http.StatusSwitchingProtocols {
						admitted.Add(1)
						break
					}
					if resp.StatusCode != http.StatusTooManyRequests {
						failed.Add(1)
						note(fmt.Sprintf("flood: status %d", resp.StatusCode))
						break
					}
					refused.Add(1)
				}
				stop()
				c.Close()
			}
		})
	}
	// Honest clients, one handshake each from a fresh address, paced.
	var tried, ok int
	tick := time.NewTicker(upgradeHonestEvery)
	for fctx.Err() == nil {
		select {
		case <-fctx.Done():
			continue
		case <-tick.C:
		}
		tried++
		code, err := upgradeOnce(ctx, addr, tlsCfg, a.env.nextSource(), req)
		switch {
		case err != nil:
			note("honest: " + err.Error())
		case code == http.StatusSwitchingProtocols:
			ok++
		default:
			note(fmt.Sprintf("honest: status %d", code))
		}
	}
	tick.Stop()
	wg.Wait()
	secs := time.Since(start).Seconds()
	limit := float64(cfg.handshakeBurst+1) + float64(int64(cfg.handshakeRate*secs))
	// Sessions counts the flood's connections: an admitted upgrade ends
	// its connection (closed by the attacker), as does the end of the
	// attack; ClosedByServer those the server closed.
	rep.Sessions = int(conns.Load())
	rep.ClosedByServer = int(serverClosed.Load())
	rep.Open = rep.Sessions - rep.ClosedByServer
	rep.Refused = refused.Load()
	rep.FramesWritten = admitted.Load() + refused.Load()
	rep.Notes = notes.all()
	rep.Figures = map[string]float64{
		figFloodAdmitted: float64(admitted.Load()), figFloodRefused: float64(refused.Load()), figFloodLimit: limit,
		figHonestTried: float64(tried), figHonestOK: float64(ok),
	}
	rep.Summary = fmt.Sprintf("one address on %d keep-alive connections sent %d upgrade requests in %.1fs: %d admitted (limit burst+1 + rate×t = %.0f), %d refused 429, %d failed; honest handshakes from other addresses: %d of %d",
		cfg.floodConns, admitted.Load()+refused.Load()+failed.Load(), secs, admitted.Load(), limit, refused.Load(), failed.Load(), ok, tried)
	return rep
}

// judgeUpgradeFlood adds upgrade-flood's targets.
func (r *abuseReport) judgeUpgradeFlood(add func(target, status, detail string)) {
	honest := "upgrade-flood: honest handshakes from other addresses >= 99 %"
	flood := "upgrade-flood: flooding address admitted at most burst+1 + rate×t"
	a := r.find(attackUpgradeFlood)
	if a == nil {
		add(honest, "n/a", "not run")
		add(flood, "n/a", "not run")
		return
	}
	f := a.Attacker.Figures
	status := "pass"
	if f[figHonestTried] == 0 || f[figHonestOK]*100 < f[figHonestTried]*99 {
		status = "fail"
	}
	add(honest, status, fmt.Sprintf("%.0f of %.0f", f[figHonestOK], f[figHonestTried]))
	status = "pass"
	if f[figFloodAdmitted] > f[figFloodLimit] {
		status = "fail"
	}
	add(flood, status, fmt.Sprintf("%.0f admitted, limit %.0f, %.0f refused", f[figFloodAdmitted], f[figFloodLimit], f[figFloodRefused]))
}
