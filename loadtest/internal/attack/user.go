package attack

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/stompframe"
)

// Figures of the user-forge attack.
const (
	figForgedSent     = "forged_sent"
	figForgedReceived = "forged_received"
	figForgedUnmarked = "forged_received_unmarked"
)

// userForgeAttack: sessions without any permission for user destinations
// SEND to another principal's private queue, dressed as the backend's
// message (a body and a sender header a game backend would write). The
// victim is a session of the attack's own that subscribes to
// "/user/queue/inbox" and reads everything; a forged message that reaches
// it without the server's sender header is one the victim cannot tell
// from its backend's.
type userForgeAttack struct {
	env    *attackEnv
	atk    *attackers
	victim *client.Conn
	// principal is the victim's name, from CONNECTED's user-name.
	principal string

	mu       sync.Mutex
	received int // forged MESSAGEs the victim read; guarded by mu
	unmarked int // of which without a sender header naming another principal; guarded by mu
}

// Bounds of user-forge, each with its reason.
const (
	// userForgeInterval paces each attacking session: four a second
	// stays under any send limit, so only a permission check can stop
	// them.
	userForgeInterval = 250 * time.Millisecond
	// userForgeSessions bounds the sessions the attack opens in all: a
	// server that closes each forger on its first SEND is met again by a
	// fresh one, up to this many.
	userForgeSessions = 20
	// forgedMarker is in every forged body, so the victim counts only
	// the attack's messages.
	forgedMarker = `"from":"backend","type":"you-won"`
)

func (a *userForgeAttack) prepare(ctx context.Context) error {
	a.atk = newAttackers(a.env)
	c, err := a.env.d.Dial(ctx, client.HTTPClientFrom(a.env.nextSource()), "0,0")
	if err != nil {
		return fmt.Errorf("user-forge victim: %w", err)
	}
	if c.UserName == "" {
		c.Close()
		return fmt.Errorf("user-forge victim: CONNECTED names no user-name")
	}
	if err := c.Subscribe(ctx, "inbox", "/user/queue/inbox"); err != nil {
		c.Close()
		return fmt.Errorf("user-forge victim: %w", err)
	}
	a.victim, a.principal = c, c.UserName
	return nil
}

// read counts the forged MESSAGEs the victim receives until ctx ends.
func (a *userForgeAttack) read(ctx context.Context) {
	for {
		msg, err := a.victim.ReadMessage(ctx)
		if err != nil {
			return
		}
		a.victim.Decoder.Feed(msg)
		for {
			f, err := a.victim.Decoder.Next()
			if err != nil || f == nil {
				break
			}
			if f.Command != stompframe.CommandMessage || !bytes.Contains(f.Body, []byte(forgedMarker)) {
				continue
			}
			a.mu.Lock()
			a.received++
			if s := f.Get("sender"); s == "" || s == "backend" || s == a.principal {
				a.unmarked++
			}
			a.mu.Unlock()
		}
	}
}

func (a *userForgeAttack) run(ctx context.Context, start, end time.Time) attackerReport {
	readCtx, stopRead := context.WithDeadline(ctx, end.Add(probeTimeout))
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		a.read(readCtx)
	}()

	var frame []byte
	frame = append(frame, "SEND\n"...)
	frame = stompframe.AppendHeader(frame, "destination", "/user/"+a.principal+"/queue/inbox", stompframe.V12)
	frame = stompframe.AppendHeader(frame, "content-type", "application/json", stompframe.V12)
	frame = stompframe.AppendHeader(frame, "sender", "backend", stompframe.V12)
	body := []byte("{" + forgedMarker + "}")
	frame = stompframe.AppendContentLength(frame, len(body))
	frame = append(frame, '\n')
	frame = append(frame, body...)
	frame = append(frame, 0)

	var sent int64
	var s *attackSession
	opened := 0
	for k := 0; ; k++ {
		if !sleepUntil(ctx, start.Add(time.Duration(k)*userForgeInterval)) || !time.Now().Before(end) {
			break
		}
		if s == nil || s.writeFailed.Load() || (s.sink != nil && s.sink.Gone.Load()) {
			if opened == userForgeSessions {
				continue
			}
			var err error
			if s, err = a.atk.open(ctx, a.env.nextSource(), "0,0", true); err != nil {
				a.atk.note("open: " + err.Error())
				s = nil
				continue
			}
			opened++
		}
		if a.atk.write(s, websocket.MessageText, frame, 1) == nil {
			sent++
		}
	}
	sleepUntil(ctx, end)
	var rep attackerReport
	a.atk.outcome(&rep)
	a.atk.closeAll()
	readers.Wait()
	stopRead()
	a.victim.Close()

	a.mu.Lock()
	received, unmarked := a.received, a.unmarked
	a.mu.Unlock()
	rep.Figures = map[string]float64{figForgedSent: float64(sent), figForgedReceived: float64(received), figForgedUnmarked: float64(unmarked)}
	rep.Summary = fmt.Sprintf("%d sessions sent %d SENDs dressed as the backend's to %s's private queue; it received %d, %d of them without a sender header naming the forger",
		opened, sent, a.principal, received, unmarked)
	return rep
}
