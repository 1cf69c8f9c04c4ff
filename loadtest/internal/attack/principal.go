package attack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/stompframe"
)

// Figures of the principal-flood attack.
const (
	figPrincipalSent     = "principal_sent"
	figPrincipalReceived = "principal_received"
)

// Bounds of principal-flood, each with its reason.
const (
	// defaultPrincipalSessions is wsserver's default
	// -max-sessions-per-principal: a token opened as often as the cap
	// lets it, each session at the send limit, publishes ten times what
	// one session may.
	defaultPrincipalSessions = 10
	// defaultPrincipalLimit is wsserver's default -principal-send-limit
	// per 1 s window.
	defaultPrincipalLimit = 60
	// principalFloodMarker is in every flood body, so the observer counts
	// only the attack's messages.
	principalFloodMarker = "principal-flood"
	// principalFloodName is the principal every session of the attack
	// is.
	principalFloodName = "flood"
)

// principalFloodAttack: one principal's token opened in
// -principal-sessions sessions, each publishing at -send-limit to one
// topic, where a session of the attack's own counts what arrives. The
// per-session limit lets each session through; only a limit on the
// principal as a whole holds the total to -principal-send-limit.
type principalFloodAttack struct {
	env      *attackEnv
	atk      *attackers
	sessions []*attackSession
	observer *client.Conn

	mu       sync.Mutex
	received int // flood MESSAGEs the observer read; guarded by mu
}

func (a *principalFloodAttack) prepare(ctx context.Context) error {
	if a.env.cfg.jwtSecret == "" {
		return fmt.Errorf("principal-flood needs -jwt-secret, the server's -jwt-secret, to sign its principal's token")
	}
	obs, err := a.env.d.Dial(ctx, client.HTTPClientFrom(a.env.nextSource()), "0,0")
	if err != nil {
		return fmt.Errorf("principal-flood observer: %w", err)
	}
	if err := obs.Subscribe(ctx, "flood", a.env.dest(attackPrincipalFlood)); err != nil {
		obs.Close()
		return fmt.Errorf("principal-flood observer: %w", err)
	}
	a.observer = obs
	a.atk = newAttackers(a.env)
	d := *a.env.d
	d.Passcode = signHS256(a.env.cfg.jwtSecret, principalFloodName, "0")
	for range a.env.cfg.principalSessions {
		c, err := d.Dial(ctx, client.HTTPClientFrom(a.env.nextSource()), "0,0")
		if err != nil {
			a.atk.closeAll()
			obs.Close()
			return fmt.Errorf("principal-flood session: %w", err)
		}
		a.sessions = append(a.sessions, a.atk.adopt(c, true))
	}
	return nil
}

// read counts the flood MESSAGEs the observer receives until ctx ends.
func (a *principalFloodAttack) read(ctx context.Context) {
	for {
		msg, err := a.observer.ReadMessage(ctx)
		if err != nil {
			return
		}
		a.observer.Decoder.Feed(msg)
		for {
			f, err := a.observer.Decoder.Next()
			if err != nil || f == nil {
				break
			}
			if f.Command == stompframe.CommandMessage && bytes.Contains(f.Body, []byte(principalFloodMarker)) {
				a.mu.Lock()
				a.received++
				a.mu.Unlock()
			}
		}
	}
}

func (a *principalFloodAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	readCtx, stopRead := context.WithDeadline(ctx, end.Add(probeTimeout))
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		a.read(readCtx)
	}()

	var frame []byte
	frame = append(frame, "SEND\n"...)
	frame = stompframe.AppendHeader(frame, "destination", a.env.dest(attackPrincipalFlood), stompframe.V12)
	body := []byte(principalFloodMarker)
	frame = stompframe.AppendContentLength(frame, len(body))
	frame = append(frame, '\n')
	frame = append(frame, body...)
	frame = append(frame, 0)

	var wg sync.WaitGroup
	for _, s := range a.sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paceUntil(ctx, start, end, float64(a.env.cfg.sendLimit), func(n int64) error {
				return a.atk.write(s, websocket.MessageText, bytes.Repeat(frame, int(n)), n)
			})
		}()
	}
	wg.Wait()
	sleepUntil(ctx, end)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	readers.Wait()
	stopRead()
	a.observer.Close()

	a.mu.Lock()
	received := a.received
	a.mu.Unlock()
	rep.Figures = map[string]float64{figPrincipalSent: float64(rep.FramesWritten), figPrincipalReceived: float64(received)}
	rep.Summary = fmt.Sprintf("%d sessions of principal %q sent %d SENDs at %d/s each; the observer received %d",
		len(a.sessions), principalFloodName, rep.FramesWritten, a.env.cfg.sendLimit, received)
	return rep
}

// signHS256 returns an HS256 JWT for sub, valid for an hour, made
// distinct by jti.
func signHS256(secret, sub, jti string) string {
	enc := base64.RawURLEncoding.EncodeToString
	head := enc([]byte(`{"alg":"HS256","typ":"JWT"}`))
	body := enc([]byte(`{"sub":` + strconv.Quote(sub) + `,"exp":` + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + `,"jti":` + strconv.Quote(jti) + `}`))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + body))
	return head + "." + body + "." + enc(mac.Sum(nil))
}

// principalFloodBound is the most flood messages a server holding one
// principal to limit per 1 s window (plus a tenth of it per window, the
// single instance's optimistic frames) may deliver in seconds: every
// window the period touches, whole.
func principalFloodBound(limit int, seconds float64) float64 {
	windows := math.Ceil(seconds) + 1
	return windows * float64(limit+limit/10)
}

// judgePrincipalFlood adds principal-flood's target.
func (r *abuseReport) judgePrincipalFlood(cfg *abuseConfig, add func(target, status, detail string)) {
	target := "principal-flood: one principal's sessions together deliver at most -principal-send-limit per window"
	a := r.find(attackPrincipalFlood)
	switch {
	case a == nil:
		add(target, "n/a", "not run")
		return
	case a.Error != "":
		add(target, "n/a", a.Error)
		return
	case cfg.principalLimit == 0:
		add(target, "n/a", a.Attacker.Summary+"; no -principal-send-limit given")
		return
	}
	got := a.Attacker.Figures[figPrincipalReceived]
	bound := principalFloodBound(cfg.principalLimit, a.Seconds)
	detail := fmt.Sprintf("%s over %.1fs; bound %.0f (%d/s and its overshoot, for each window touched)", a.Attacker.Summary, a.Seconds, bound, cfg.principalLimit)
	status := "pass"
	if got > bound || got == 0 {
		status = "fail"
	}
	add(target, status, detail)
}
