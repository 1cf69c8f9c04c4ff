package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// pinger finds dead peers among sessions that negotiated no STOMP
// heart-beat from the client: every Config.PingInterval it sends a
// WebSocket ping and waits Config.PingTimeout for the pong, which the
// session's reader takes in (wsconn's Ping needs a
// concurrent Reader, and the session always has one). A peer that does
// not answer is ended at once, without a close handshake it would never
// complete.
//
// The ping runs on the timer's goroutine, so an idle session still has
// no goroutine of its own between pings. The zero value is ready: no ping
// is armed until startPings. A pinger is safe for concurrent use.
type pinger struct {
	// mu guards the fields below. It is never held while taking the
	// session's mu.
	mu      sync.Mutex
	timer   *time.Timer        // the next ping; nil before start
	cancel  context.CancelFunc // ends the ping in flight; nil if none
	stopped bool               // the session is ending: no more pings

	inFlight sync.WaitGroup // the ping in flight, if any
}

// startPings arms the first ping; heartbeat.go calls it when the session
// negotiated no incoming heart-beat.
func (s *session) startPings() {
	every := s.srv.cfg.PingInterval
	if every <= 0 {
		return
	}
	if s.ping == nil {
		s.ping = &pinger{}
	}
	p := s.ping
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.timer != nil {
		return
	}
	p.timer = time.AfterFunc(every, s.pingPeer)
}

// pingPeer sends one ping and waits for its pong. On a pong it arms the
// next ping; on silence it ends the session as outcome.ClosePingTimeout.
func (s *session) pingPeer() {
	p := s.ping
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.srv.cfg.PingTimeout)
	p.cancel = cancel
	p.inFlight.Add(1)
	p.mu.Unlock()
	defer p.inFlight.Done()

	sent := time.Now().UnixNano()
	err := s.conn.Ping(ctx)
	cancel()

	p.mu.Lock()
	p.cancel = nil
	if p.stopped {
		// The session ended while the ping was out; its reader has
		// recorded why.
		p.mu.Unlock()
		return
	}
	if resumed := s.resumed.Load(); err == nil || resumed >= sent || s.paused.Load() > resumed {
		// A pong, or a reader that the inbound budget paused while the
		// ping was out (or pauses now): that client sends more than is
		// read, so its pong may wait behind its own backlog; it is not
		// dead.
		p.timer.Reset(s.srv.cfg.PingInterval)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if errors.Is(err, net.ErrClosed) {
		// The connection closed under the ping: the reader sees the same
		// and records the reason.
		return
	}
	// No pong in time, or the ping could not even be written (a writer
	// stuck on a peer that does not read holds the connection): the peer
	// is gone or not reading.
	s.srv.cfg.Logger.Debug("ping timeout", "session", s.st.ID, "ip", s.st.RemoteIP.String(), "err", err)
	s.abort(outcome.ClosePingTimeout)
}

// stopPings stops the pings and waits for the one in flight to return.
// The reader calls it as the session ends.
func (s *session) stopPings() {
	p := s.ping
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.inFlight.Wait()
}
