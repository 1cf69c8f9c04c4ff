package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// reconnectLoopAttack: clients stuck in a reconnect loop, as a client
// library with a short fixed retry makes them. One connects from one
// source address over and over (CONNECT, DISCONNECT, again after
// -loop-interval); with -jwt-secret a second one connects as one
// principal, "looper", from a fresh source address each time, so that
// only a count by principal can see the loop. Each pause keeps the loop
// under the default handshake rate (3 r/s), so the handshake limiter
// alone never stops it.
type reconnectLoopAttack struct {
	env *attackEnv
	atk *attackers
}

func (a *reconnectLoopAttack) prepare(context.Context) error {
	a.atk = newAttackers(a.env)
	return nil
}

// loopTally counts what one loop's CONNECTs became.
type loopTally struct {
	completed, refusedHandshake, refusedConnect, failed atomic.Int64
}

// once runs one turn of a loop from local, with passcode (if any) as
// the token: dial, and on CONNECTED say DISCONNECT, which the server
// answers by closing.
func (a *reconnectLoopAttack) once(ctx context.Context, local netip.Addr, passcode string, t *loopTally) {
	d := *a.env.d
	d.Passcode = passcode
	hc := client.HTTPClientFrom(local)
	if hc != nil {
		defer hc.CloseIdleConnections()
	}
	c, err := d.Dial(ctx, hc, "0,0")
	var he *client.HandshakeError
	var ef *client.ErrorFrame
	switch {
	case err == nil:
		t.completed.Add(1)
		s := a.atk.adopt(c, true)
		_ = a.atk.write(s, websocket.MessageText, []byte("DISCONNECT\nreceipt:bye\n\n\x00"), 1)
	case errors.As(err, &he) && he.Status == http.StatusTooManyRequests:
		t.refusedHandshake.Add(1)
	case errors.As(err, &ef):
		t.refusedConnect.Add(1)
		a.atk.note("CONNECT refused: " + ef.Message)
	case ctx.Err() == nil:
		t.failed.Add(1)
		a.atk.note("open: " + err.Error())
	}
}

func (a *reconnectLoopAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	cfg := a.env.cfg
	var rep attackerReport
	if !sleepUntil(ctx, start) {
		return rep
	}
	actx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var addr, principal loopTally
	loopFrom := a.env.nextSource()
	loop := func(turn func(n int)) {
		for n := 0; actx.Err() == nil; n++ {
			turn(n)
			sleepUntil(actx, time.Now().Add(cfg.loopInterval))
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { loop(func(int) { a.once(actx, loopFrom, "", &addr) }) })
	if cfg.jwtSecret != "" {
		wg.Go(func() {
			loop(func(n int) {
				a.once(actx, a.env.nextSource(), signHS256(cfg.jwtSecret, "looper", strconv.Itoa(n)), &principal)
			})
		})
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	// The control: another address, after the loops. Refused, it says
	// the server saw every session from one address (the tool's sources
	// are not spread), and the figures say nothing about per-address
	// keys.
	var control loopTally
	cctx, ccancel := context.WithTimeout(ctx, client.DialTimeout)
	a.once(cctx, a.env.nextSource(), "", &control)
	ccancel()
	a.atk.outcome(&rep)
	a.atk.closeAll()
	rep.Refused += addr.refusedHandshake.Load() + addr.refusedConnect.Load() + principal.refusedHandshake.Load() + principal.refusedConnect.Load()
	rep.Figures = map[string]float64{
		figLoopAddrCompleted:      float64(addr.completed.Load()),
		figLoopAddrRefusedHS:      float64(addr.refusedHandshake.Load()),
		figLoopAddrRefusedConnect: float64(addr.refusedConnect.Load()),
		figLoopControl:            float64(control.completed.Load()),
		figLoopSeconds:            seconds,
	}
	rep.Summary = fmt.Sprintf("a loop from one address every %v for %.1f s: %d CONNECTs completed, %d handshakes refused (429), %d CONNECTs refused",
		cfg.loopInterval, seconds, addr.completed.Load(), addr.refusedHandshake.Load(), addr.refusedConnect.Load())
	if cfg.jwtSecret != "" {
		rep.Figures[figLoopPrincipalCompleted] = float64(principal.completed.Load())
		rep.Figures[figLoopPrincipalRefused] = float64(principal.refusedHandshake.Load() + principal.refusedConnect.Load())
		rep.Summary += fmt.Sprintf("; one principal from a new address each time: %d completed, %d refused",
			principal.completed.Load(), principal.refusedHandshake.Load()+principal.refusedConnect.Load())
	}
	rep.Summary += fmt.Sprintf("; another address afterwards was %s", map[bool]string{true: "accepted", false: "refused"}[control.completed.Load() == 1])
	return rep
}

// The reconnect-loop attack's figures.
const (
	figLoopAddrCompleted      = "address_connects_completed"
	figLoopAddrRefusedHS      = "address_handshakes_refused"
	figLoopAddrRefusedConnect = "address_connects_refused"
	figLoopPrincipalCompleted = "principal_connects_completed"
	figLoopPrincipalRefused   = "principal_refused"
	figLoopControl            = "control_accepted"
	figLoopSeconds            = "seconds"
)

// loopBound is the most CONNECTs one key may complete in seconds under
// the server's -reconnect-limit and -reconnect-window: the limit in each
// window the run touches (a window starts at the key's first CONNECT).
func loopBound(cfg *abuseConfig, seconds float64) float64 {
	windows := math.Max(1, math.Ceil(seconds/cfg.reconnectWindow.Seconds()))
	return float64(cfg.reconnectLimit) * windows
}

// judgeReconnectLoop holds each loop to the server's reconnect limit,
// and another address to being let in.
func (r *abuseReport) judgeReconnectLoop(cfg *abuseConfig, add func(target, status, detail string)) {
	target := "reconnect-loop: a looping address or principal completes at most -reconnect-limit CONNECTs per -reconnect-window, another address connects"
	a := r.find(attackReconnectLoop)
	if a == nil {
		add(target, "n/a", "not run")
		return
	}
	f := a.Attacker.Figures
	bound := loopBound(cfg, f[figLoopSeconds])
	detail := fmt.Sprintf("%s; bound %.0f (limit %d per %v)", a.Attacker.Summary, bound, cfg.reconnectLimit, cfg.reconnectWindow)
	_, principalRan := f[figLoopPrincipalCompleted]
	switch {
	case cfg.reconnectLimit <= 0:
		add(target, "n/a", a.Attacker.Summary+"; the server's -reconnect-limit not given")
	case f[figLoopControl] != 1:
		add(target, "n/a", detail+"; another address was refused too: the server saw one address for every session (run on a loopback target with spread sources)")
	case f[figLoopAddrCompleted] > bound, principalRan && f[figLoopPrincipalCompleted] > bound:
		add(target, "fail", detail)
	default:
		add(target, "pass", detail)
	}
}
