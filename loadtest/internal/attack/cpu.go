package attack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/scenario"
	"github.com/stompgate/stompgate/stompframe"
)

// The attacks in this file spend the server's CPU with frames no other
// limit applies to: frames it reads and drops, and token headers it
// must check.

// Figure names of the CPU attacks.
const (
	figFramesPerSec = "frames_per_sec"
	figTokenFrames  = "token_frames"
)

// floodKinds are the frames the unlimited-frames sessions send, one kind
// per session in turn: each is cheap to send and was read without limit.
var floodKinds = []string{"ack", "eol", "continuation", "dropped-send"}

// unlimitedFramesAttack: sessions send, as fast as their sockets take
// them, frames no per-frame limit applies to: ACKs without receipt,
// heart-beat EOLs, empty WebSocket continuation fragments of a message
// that never ends, and SENDs over the send limit (dropped by the server
// anyway).
type unlimitedFramesAttack struct {
	env *attackEnv
	atk *attackers
	s   []*attackSession
	raw []net.Conn // each session's TCP connection, for frames no WebSocket library writes
}

func (a *unlimitedFramesAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	n := a.env.cfg.floodSessions
	a.s, a.raw = make([]*attackSession, n), make([]net.Conn, n)
	err := scenario.Parallel(ctx, n, scenario.DialConcurrency, func(i int) error {
		var err error
		a.s[i], a.raw[i], err = a.openRaw(ctx, a.env.nextSource())
		return err
	})
	if err != nil {
		a.atk.closeAll()
	}
	return err
}

// openRaw opens a session from local and also returns its TCP
// connection: the WebSocket library writes each empty fragment through
// a masking key from crypto/rand and a buffer, where the attack writes
// them a thousand to a system call. Nothing else writes to the
// connection while the attack does.
func (a *unlimitedFramesAttack) openRaw(ctx context.Context, local netip.Addr) (*attackSession, net.Conn, error) {
	var nc net.Conn
	nd := &net.Dialer{Timeout: client.DialTimeout}
	if local.IsValid() {
		nd.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := nd.DialContext(ctx, network, addr)
			nc = c
			return c, err
		},
		MaxIdleConnsPerHost: 1,
	}}
	c, err := a.env.d.Dial(ctx, client, "0,0")
	if err != nil {
		return nil, nil, err
	}
	return a.atk.adopt(c, false), nc, nil
}

// floodFrames returns the message a session of kind sends again and
// again and the frames it holds. For "continuation" it is the payload of
// each empty fragment: none.
func (a *unlimitedFramesAttack) floodFrames(kind string) ([]byte, int64) {
	switch kind {
	case "ack":
		return repeatFrames([]byte("ACK\nid:1\n\n\x00"), client.MaxBatchBytes)
	case "eol":
		return repeatFrames([]byte("\n"), client.MaxBatchBytes)
	case "dropped-send":
		return repeatFrames(appendSend(nil, a.env.dest("dropped"), "", attackBody(16)), client.MaxBatchBytes)
	}
	return nil, 1
}

func (a *unlimitedFramesAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	var wg sync.WaitGroup
	began := time.Now()
	for i, s := range a.s {
		kind := floodKinds[i%len(floodKinds)]
		msg, per := a.floodFrames(kind)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleepUntil(ctx, start) {
				return
			}
			if kind == "continuation" {
				a.continuations(ctx, s, a.raw[i], end)
				return
			}
			for ctx.Err() == nil && time.Now().Before(end) {
				if a.atk.write(s, websocket.MessageText, msg, per) != nil {
					return
				}
			}
		}()
	}
	sleepUntil(ctx, end)
	took := time.Since(began)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll() // unblocks writes the server stopped reading
	wg.Wait()
	rate := perSecond(a.atk.written.Load(), took)
	rep.FramesWritten = a.atk.written.Load()
	rep.Figures = map[string]float64{figFramesPerSec: rate}
	kinds := floodKinds[:min(len(a.s), len(floodKinds))]
	rep.Summary = fmt.Sprintf("%d sessions (%v) wrote %d frames no limit counts, %.0f per second in all, as fast as the server read them",
		len(a.s), kinds, rep.FramesWritten, rate)
	return rep
}

// continuations writes one text message that never ends: an empty first
// fragment, then empty continuation fragments until end, masked with a
// zero key (RFC 6455 section 5.3 lets the client choose it).
func (a *unlimitedFramesAttack) continuations(ctx context.Context, s *attackSession, nc net.Conn, end time.Time) {
	const batch = 10_000
	first := []byte{0x01, 0x80, 0, 0, 0, 0}
	frames := bytes.Repeat([]byte{0x00, 0x80, 0, 0, 0, 0}, batch)
	buf, n := first, int64(1)
	for ctx.Err() == nil && time.Now().Before(end) {
		_ = nc.SetWriteDeadline(end)
		if _, err := nc.Write(buf); err != nil {
			if !a.atk.done.Load() && time.Now().Before(end) {
				s.writeFailed.Store(true)
				a.atk.note("write: " + err.Error())
			}
			return
		}
		a.atk.written.Add(n)
		buf, n = frames, batch
	}
}

// tokenChurnAttack: sessions of one principal put a token header on
// every frame. One alternates two valid tokens, which cost a signature
// check per frame while the server remembered only the one it held; the
// other sends a new token on every frame, which only a budget of checks
// holds back. Tokens are HS256 JWTs signed with -jwt-secret.
type tokenChurnAttack struct {
	env                   *attackEnv
	atk                   *attackers
	alternating, renewing *attackSession
}

func (a *tokenChurnAttack) prepare(ctx context.Context) error {
	if a.env.cfg.jwtSecret == "" {
		return fmt.Errorf("token-churn needs -jwt-secret, the server's -jwt-secret, to sign its tokens")
	}
	a.atk = newAttackers(a.env)
	d := *a.env.d
	d.Passcode = a.token(0)
	for _, p := range []**attackSession{&a.alternating, &a.renewing} {
		c, err := d.Dial(ctx, client.HTTPClientFrom(a.env.nextSource()), "0,0")
		if err != nil {
			a.atk.closeAll()
			return err
		}
		*p = a.atk.adopt(c, true)
	}
	return nil
}

// token returns an HS256 JWT for the principal "churn", valid for an
// hour, made distinct by n.
func (a *tokenChurnAttack) token(n int) string { return hs256Token(a.env.cfg.jwtSecret, "churn", n) }

// hs256Token returns an HS256 JWT signed with secret for the principal
// sub, valid for an hour, made distinct by n (its jti).
func hs256Token(secret, sub string, n int) string {
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc([]byte(`{"sub":"` + sub + `","exp":` + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + `,"jti":"` + strconv.Itoa(n) + `"}`))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc(mac.Sum(nil))
}

// tokenMessage packs ACK frames carrying tokens: the two of pair in turn,
// or from next on, a new one each.
func (a *tokenChurnAttack) tokenMessage(pair []string, next *int) ([]byte, int64) {
	var b []byte
	var n int64
	for len(b) < client.MaxBatchBytes-1024 {
		tok := ""
		if pair != nil {
			tok = pair[n%2]
		} else {
			*next++
			tok = a.token(*next)
		}
		b = append(b, "ACK\nid:1\n"...)
		b = stompframe.AppendHeader(b, "token", tok, stompframe.V12)
		b = append(b, '\n', 0)
		n++
	}
	return b, n
}

func (a *tokenChurnAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	pair := []string{a.token(1), a.token(2)}
	var wg sync.WaitGroup
	began := time.Now()
	for _, s := range []*attackSession{a.alternating, a.renewing} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleepUntil(ctx, start) {
				return
			}
			next := 2
			alt, per := a.tokenMessage(pair, nil)
			for ctx.Err() == nil && time.Now().Before(end) {
				msg, n := alt, per
				if s == a.renewing {
					msg, n = a.tokenMessage(nil, &next)
				}
				if a.atk.write(s, websocket.MessageText, msg, n) != nil {
					return
				}
			}
		}()
	}
	sleepUntil(ctx, end)
	took := time.Since(began)
	var rep attackerReport
	a.atk.outcome(&rep)
	renewingClosed := a.renewing.sink.Gone.Load()
	alternatingOpen := !a.alternating.sink.Gone.Load()
	a.atk.closeAll()
	wg.Wait()
	rep.Figures = map[string]float64{figTokenFrames: float64(rep.FramesWritten), figFramesPerSec: perSecond(rep.FramesWritten, took),
		figOpenAtEnd: b2f(alternatingOpen)}
	rep.Summary = fmt.Sprintf("two sessions of one principal wrote %d ACKs with a token header: one alternating two valid tokens (open at the end: %v), one with a new token on each frame (closed by the server: %v)",
		rep.FramesWritten, alternatingOpen, renewingClosed)
	return rep
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// judgeCPU adds the targets of the CPU attacks.
func (r *abuseReport) judgeCPU(cfg *abuseConfig, add func(target, status, detail string)) {
	target := "unlimited-frames leaves the honest p99 within 2× its baseline"
	switch a := r.find(attackUnlimitedFrames); {
	case a == nil:
		add(target, "n/a", "not run")
	case a.Honest.Latency == nil:
		add(target, "n/a", "no honest latency measured")
	default:
		p99 := a.Honest.Latency.P99
		detail := fmt.Sprintf("honest p99 %.2f ms with %d flooding sessions writing %.0f frames/s", p99, cfg.floodSessions, a.Attacker.Figures[figFramesPerSec])
		if cfg.baselineP99 <= 0 {
			add(target, "n/a", detail+"; no -baseline-p99 given (run with -flood-sessions 0 for it)")
			break
		}
		status := "pass"
		if p99 > 2*cfg.baselineP99 {
			status = "fail"
		}
		add(target, status, fmt.Sprintf("%s; baseline %.2f ms, bound %.2f ms", detail, cfg.baselineP99, 2*cfg.baselineP99))
	}
	target = "token-churn: alternating tokens stay open, new tokens past the budget are refused"
	switch a := r.find(attackTokenChurn); {
	case a == nil:
		add(target, "n/a", "not run")
	case a.Error != "":
		add(target, "n/a", a.Error)
	default:
		status := "pass"
		refused := false
		for _, e := range a.Attacker.ErrorFrames {
			refused = refused || e == "too many token checks"
		}
		if a.Attacker.Figures[figOpenAtEnd] != 1 || !refused {
			status = "fail"
		}
		add(target, status, fmt.Sprintf("%s; ERROR frames %q; server %.2f cores on average", a.Attacker.Summary, a.Attacker.ErrorFrames, a.Server.CPUCores))
	}
}
