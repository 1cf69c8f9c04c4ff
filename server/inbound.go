package server

import (
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// InputObserver is an Observer that also counts the inbound budget's
// pauses (Config.InboundFrames); the server checks its Observer for it.
// metrics.Metrics implements it.
type InputObserver interface {
	// InputPaused reports that a session's reader stopped reading for d
	// because the session spent its inbound budget; budget is
	// outcome.InputBudgetFrames or outcome.InputBudgetBytes, whichever ran out.
	InputPaused(budget string, d time.Duration)
}

// inboundBudget is what a session may send per window: frames
// (WebSocket frames of every opcode, empty continuation fragments and
// pings included; STOMP frames; heart-beat EOLs) and WebSocket payload
// bytes. It counts in a fixed window with lazy reset, like
// sessionlimit.FixedWindow: a window opens at the first charge that finds
// the previous one over. Nothing is refused or dropped: a charge that
// does not fit makes the reader wait for the next window (pause), so an
// over-budget client is slowed by TCP, not closed.
//
// The zero value is ready; it is owned by the session's reader goroutine
// and takes no lock.
type inboundBudget struct {
	start         int64 // Unix nanoseconds the window opened; 0 before the first charge
	frames, bytes int64 // spent in the window

	// Totals since the session opened, read by tests on other
	// goroutines: what the reader let through, the windows it opened and
	// the times it paused.
	totalFrames, totalBytes, windows, pauses atomic.Int64
}

// charge spends frames and bytes read at now (wsconn.Conn.ReadTime: the
// read that brought them, not a fresh clock read). When they do not fit
// in the window, the reader waits until it ends and they open the next.
// A window always takes its first charge, so a single WebSocket frame
// larger than the byte budget passes alone. It reports whether the
// session is ending (a pause ends early for that).
func (s *session) charge(now time.Time, frames, bytes int) (ending bool) {
	b := &s.in
	cfg := &s.srv.cfg
	window := int64(cfg.InboundWindow)
	t := now.UnixNano()
	// A read older than the window (bytes read before a pause) counts in
	// the current one: the difference is negative.
	if t-b.start >= window {
		b.start, b.frames, b.bytes = t, 0, 0
		b.windows.Add(1)
	}
	overFrames := b.frames+int64(frames) > int64(cfg.InboundFrames)
	if (overFrames || b.bytes+int64(bytes) > int64(cfg.InboundBytes)) && (b.frames > 0 || b.bytes > 0) {
		budget := outcome.InputBudgetBytes
		if overFrames {
			budget = outcome.InputBudgetFrames
		}
		ending = s.pauseInput(budget, time.Duration(b.start+window-time.Now().UnixNano()))
		b.start, b.frames, b.bytes = time.Now().UnixNano(), 0, 0
		b.windows.Add(1)
	}
	b.frames += int64(frames)
	b.bytes += int64(bytes)
	b.totalFrames.Add(int64(frames))
	b.totalBytes.Add(int64(bytes))
	return ending
}

// pauseInput stops the reader for d, or until the session ends, and
// reports whether it is ending. The socket is not read meanwhile: the
// client's sends fill its TCP window and block it. The writers this
// reader's batch holds back go out first, and the reader counts as having
// read when it resumes (the client was sending all along), so neither the
// heart-beat check nor a ping misfires for a pause the server chose.
func (s *session) pauseInput(budget string, d time.Duration) bool {
	s.in.pauses.Add(1)
	s.flushBatch()
	start := time.Now()
	s.paused.Store(start.UnixNano())
	if d > 0 {
		until := start.Add(d)
		// until is read before the timer is armed, so the timer fires at
		// or after it and the loop below cannot miss its wake-up.
		t := time.AfterFunc(d, s.box.wake)
		s.box.waitUntil(until)
		t.Stop()
	}
	now := time.Now()
	s.lastRead.Store(now.UnixNano())
	s.resumed.Store(now.UnixNano())
	if s.srv.input != nil {
		s.srv.input.InputPaused(budget, now.Sub(start))
	}
	return s.box.isClosed()
}

// chargeFrame is the wsconn frame hook: one frame and its payload, capped
// at the frame limit (a longer one fails the read right after).
func (s *session) chargeFrame(payload int) {
	s.charge(s.conn.ReadTime(), 1, min(payload, s.srv.cfg.Limits.MaxFrameSize))
}
