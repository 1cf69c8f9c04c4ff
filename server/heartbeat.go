package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// parseHeartBeat parses a heart-beat header value "cx,cy" in
// milliseconds. An empty value means "0,0" (STOMP 1.2 "Heart-beating").
func parseHeartBeat(v string) (x, y time.Duration, err error) {
	if v == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return 0, 0, fmt.Errorf("heart-beat %q is not two comma-separated numbers", v)
	}
	ai, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 31)
	bi, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 31)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("heart-beat %q is not two non-negative millisecond counts", v)
	}
	return time.Duration(ai) * time.Millisecond, time.Duration(bi) * time.Millisecond, nil
}

// capHeartBeat is one part of a client's heart-beat offer under bound:
// itself, or 0 (none) when above it.
func capHeartBeat(d, bound time.Duration) time.Duration {
	if d > bound {
		return 0
	}
	return d
}

// negotiate returns the interval at which one side must send heart-beats:
// zero if either side declines, else the larger of what the sender can do
// and what the receiver wants.
func negotiate(canSend, wants time.Duration) time.Duration {
	if canSend <= 0 || wants <= 0 {
		return 0
	}
	return max(canSend, wants)
}

// startHeartBeats replaces the CONNECT deadline with the negotiated
// heart-beat timers. cx,cy is the client's offer. A client that will send
// no heart-beats is checked with WebSocket pings instead (ping.go).
func (s *session) startHeartBeats(cx, cy time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hbIn != nil {
		s.hbIn.Stop()
		s.hbIn = nil
	}
	if s.box.isClosed() {
		return
	}
	s.outEvery = negotiate(s.srv.cfg.HeartBeatSend, cy)
	s.inEvery = negotiate(cx, s.srv.cfg.HeartBeatReceive)
	if s.outEvery > 0 {
		s.hbOut = time.AfterFunc(s.outEvery, s.heartBeatOut)
	}
	if s.inEvery > 0 {
		s.hbIn = time.AfterFunc(s.inEvery+s.srv.cfg.HeartBeatTolerance, s.heartBeatIn)
	} else {
		s.startPings()
	}
}

// heartBeatOut sends an EOL when nothing was written for the negotiated
// interval, then re-arms itself for the next due time.
func (s *session) heartBeatOut() {
	idle := time.Duration(time.Now().UnixNano() - s.lastWrite.Load())
	next := s.outEvery - idle
	if next <= 0 {
		if !s.heartBeat() {
			return
		}
		next = s.outEvery
	}
	s.mu.Lock()
	if !s.box.isClosed() {
		s.hbOut.Reset(next)
	}
	s.mu.Unlock()
}

// heartBeatIn ends a session whose client has been silent for longer
// than the negotiated interval plus the tolerance. It ends it at once: a
// silent peer is most likely gone, and a close handshake would wait for a
// reply that never comes (and queue behind frames it does not read).
func (s *session) heartBeatIn() {
	limit := s.inEvery + s.srv.cfg.HeartBeatTolerance
	silent := time.Duration(time.Now().UnixNano() - s.lastRead.Load())
	if silent >= limit {
		s.abort(outcome.CloseHeartBeat)
		return
	}
	s.mu.Lock()
	if !s.box.isClosed() {
		s.hbIn.Reset(limit - silent)
	}
	s.mu.Unlock()
}
