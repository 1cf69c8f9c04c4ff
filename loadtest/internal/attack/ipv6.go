package attack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// ipv6PrefixAttack: one host spreads its handshakes over addresses of
// its own IPv6 /64, as any host can (it holds the whole /64). The
// addresses reach the server as X-Forwarded-For from the tool's loopback
// address, so the server must trust that address (-trusted-proxies
// 127.0.0.0/8). Keyed by address, each would get its own handshake burst
// and session cap; keyed by /64, they share one.
type ipv6PrefixAttack struct {
	env *attackEnv
	atk *attackers
}

// ipv6AttackNet is the attacker's /64 and ipv6ControlNet another one,
// both in the documentation prefix (RFC 3849).
var (
	ipv6AttackNet  = netip.MustParsePrefix("2001:db8:6a:1::/64")
	ipv6ControlNet = netip.MustParsePrefix("2001:db8:6a:2::/64")
)

// addrIn returns a random address of the /64 p.
func addrIn(p netip.Prefix, rng *rand.Rand) netip.Addr {
	b := p.Addr().As16()
	for i := 8; i < 16; i++ {
		b[i] = byte(rng.IntN(256))
	}
	return netip.AddrFrom16(b)
}

func (a *ipv6PrefixAttack) prepare(context.Context) error {
	a.atk = newAttackers(a.env)
	return nil
}

// dialAs opens one session that the server believes comes from ip, once:
// no retry on 429. refused reports a 429.
func (a *ipv6PrefixAttack) dialAs(ctx context.Context, hc *http.Client, ip netip.Addr) (s *attackSession, refused bool, err error) {
	d := *a.env.d
	d.Header = http.Header{"X-Forwarded-For": {ip.String()}}
	c, err := d.Dial(ctx, hc, "0,0")
	if err != nil {
		var he *client.HandshakeError
		return nil, errors.As(err, &he) && he.Status == http.StatusTooManyRequests, err
	}
	return a.atk.adopt(c, true), false, nil
}

func (a *ipv6PrefixAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	if !sleepUntil(ctx, start) {
		return rep
	}
	local := a.env.oneClient()
	hc := client.HTTPClientFrom(local)
	if hc != nil {
		defer hc.CloseIdleConnections()
	}
	actx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var accepted, refused atomic.Int64
	var wg sync.WaitGroup
	// Each address opens sessions one after another and holds them; a
	// refusal waits retryPause. Every handshake comes from a fresh
	// address of the /64.
	for w := range cfg.ipv6Addresses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for actx.Err() == nil {
				_, no, err := a.dialAs(actx, hc, addrIn(ipv6AttackNet, rng))
				switch {
				case err == nil:
					accepted.Add(1)
				case no:
					refused.Add(1)
					sleepUntil(actx, time.Now().Add(retryPause))
				case actx.Err() == nil:
					a.atk.note("open: " + err.Error())
					sleepUntil(actx, time.Now().Add(retryPause))
				}
			}
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	// The control: an address of another /64, after the flood. Refused,
	// it says the server keys everything the tool sends on one key (it
	// does not believe the tool's X-Forwarded-For), and the figures
	// above say nothing about prefixes.
	control := 1.0
	cctx, ccancel := context.WithTimeout(ctx, client.DialTimeout)
	if _, _, err := a.dialAs(cctx, hc, addrIn(ipv6ControlNet, rand.New(rand.NewPCG(1, 2)))); err != nil {
		control = 0
		a.atk.note("control address of another /64: " + err.Error())
	}
	ccancel()
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Refused += refused.Load()
	rep.Figures = map[string]float64{
		figIPv6Addresses: float64(accepted.Load() + refused.Load()),
		figIPv6Accepted:  float64(accepted.Load()),
		figIPv6Control:   control,
		figIPv6Seconds:   report.Round3(seconds),
	}
	rep.Summary = fmt.Sprintf("%d workers sent %d handshakes from as many addresses of one /64 in %.1f s: %d accepted, %d refused; an address of another /64 was %s",
		cfg.ipv6Addresses, accepted.Load()+refused.Load(), seconds, accepted.Load(), refused.Load(), map[bool]string{true: "accepted", false: "refused"}[control == 1])
	return rep
}

// The ipv6-prefix attack's figures.
const (
	figIPv6Addresses = "addresses"
	figIPv6Accepted  = "handshakes_accepted"
	figIPv6Control   = "control_accepted"
	figIPv6Seconds   = "seconds"
)

// judgeIPv6Prefix holds the ipv6-prefix attack to one handshake bucket
// for the /64: at most burst+1 from rest plus rate × seconds, and at most
// the session cap when one is given.
func (r *abuseReport) judgeIPv6Prefix(cfg *abuseConfig, add func(target, status, detail string)) {
	target := "ipv6-prefix: one /64 gets one handshake burst and one session cap"
	a := r.find(attackIPv6Prefix)
	if a == nil {
		add(target, "n/a", "not run")
		return
	}
	f := a.Attacker.Figures
	accepted, secs := f[figIPv6Accepted], f[figIPv6Seconds]
	bound := float64(cfg.handshakeBurst+1) + cfg.handshakeRate*secs
	if cfg.sessionCap > 0 {
		bound = min(bound, float64(cfg.sessionCap))
	}
	detail := fmt.Sprintf("%.0f handshakes accepted from %.0f addresses of one /64 in %.1f s; bound %.1f (burst %d + 1, %g r/s",
		accepted, f[figIPv6Addresses], secs, bound, cfg.handshakeBurst, cfg.handshakeRate)
	if cfg.sessionCap > 0 {
		detail += fmt.Sprintf(", cap %d", cfg.sessionCap)
	}
	detail += ")"
	switch {
	case f[figIPv6Control] != 1:
		add(target, "n/a", detail+"; an address of another /64 was refused too: the server does not believe this tool's X-Forwarded-For (give it -trusted-proxies 127.0.0.0/8)")
	case accepted > bound:
		add(target, "fail", detail)
	default:
		add(target, "pass", detail)
	}
}
