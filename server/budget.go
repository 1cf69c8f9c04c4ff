package server

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/stompgate/stompgate/outcome"
)

// outboundBudget is the server-wide bound on bytes queued for writing
// (Config.OutboundTotalBytes).
//
// Each session's outbox adds what it queues to total, and takes back what
// its writer is done with or what it discards, under its own mutex, in steps
// of countStep (see recountLocked): the hot path touches the shared
// counter only when a session's backlog crosses a step, and no lock is
// shared between sessions. Only a delivery that finds the
// total over the limit looks further: it scans the registry for the
// largest queues and closes them (see shed). Sessions already closed as
// slow consumers still hold what their writers took until the write
// fails; that part of total is counted in releasing too, so that it is
// not shed a second time from other sessions.
type outboundBudget struct {
	limit     int64        // Config.OutboundTotalBytes; 0: no bound
	total     atomic.Int64 // bytes held by every session's queue and writer
	releasing atomic.Int64 // the part of total held by sessions closed as slow consumers
	scanning  atomic.Bool  // a shed runs; others do not start one
	shed      atomic.Uint64
}

// excess is how far the bytes that are not already on their way out are
// over the limit; zero or less when within it.
func (o *outboundBudget) excess() int64 {
	return o.total.Load() - o.releasing.Load() - o.limit
}

// minSocketSendBuffer is the smallest SocketSendBuffer accepted: Linux
// does not go below about this much (SOCK_MIN_SNDBUF), and a smaller
// buffer would make every WebSocket write a dozen system calls.
const minSocketSendBuffer = 4096

// outboundDefaults fills and checks the server-wide outbound settings,
// where negative means off rather than an error.
func (c *Config) outboundDefaults() error {
	switch {
	case c.OutboundTotalBytes == 0:
		c.OutboundTotalBytes = DefaultOutboundTotalBytes
	case c.OutboundTotalBytes > 0 && c.OutboundTotalBytes < c.OutboundBytes:
		return configErrorf("OutboundTotalBytes %d is below OutboundBytes %d: one session could hold more than all of them together", c.OutboundTotalBytes, c.OutboundBytes)
	}
	switch {
	case c.SocketSendBuffer == 0:
		c.SocketSendBuffer = DefaultSocketSendBuffer
	case c.SocketSendBuffer > 0 && c.SocketSendBuffer < minSocketSendBuffer:
		return configErrorf("SocketSendBuffer %d is below %d bytes (negative leaves the kernel's sizing)", c.SocketSendBuffer, minSocketSendBuffer)
	}
	return nil
}

// OutboundStats are the server-wide outbound figures, read at once.
type OutboundStats struct {
	// Queued is the bytes all sessions hold for writing now: their
	// outbound queues and what their writers have taken and not yet
	// handed to the socket, counted as Config.OutboundBytes counts them,
	// each session's part rounded down to a multiple of 32 KiB (one
	// write batch). It is what OutboundTotalBytes bounds.
	Queued int64
	// Limit is Config.OutboundTotalBytes, or 0 when there is no bound.
	Limit int64
	// Shed counts the sessions closed, since start, because the total
	// went over Limit (outcome.CloseOutboundBudget).
	Shed uint64
}

// OutboundStats returns the server-wide outbound figures.
func (s *Server) OutboundStats() OutboundStats {
	return OutboundStats{Queued: s.out.total.Load(), Limit: s.out.limit, Shed: s.out.shed.Load()}
}

// heldQueue is a session and the bytes it held when a shed looked.
type heldQueue struct {
	s     *session
	bytes int
}

// shed closes the sessions holding the largest queues until the total is
// back within the limit. It runs on the publisher that took the total
// over and does not wait for any socket; when another shed runs, it
// leaves the work to it. A session holding one frame is not a candidate:
// that frame is being written, and an honest reader of a large fan-out
// holds exactly one. The cost, a pass over the registry, is paid only
// while over the limit, and every pass that finds an excess closes at
// least one session, so passes are bounded by the sessions closed.
func (s *Server) shed() {
	o := &s.out
	if o.excess() <= 0 || !o.scanning.CompareAndSwap(false, true) {
		return
	}
	defer o.scanning.Store(false)
	var held []heldQueue
	s.reg.each(func(ss *session) {
		frames, bytes, closed := ss.box.held()
		if !closed && frames > 1 {
			held = append(held, heldQueue{ss, bytes})
		}
	})
	slices.SortFunc(held, func(a, b heldQueue) int { return cmp.Compare(b.bytes, a.bytes) })
	for _, h := range held {
		if o.excess() <= 0 {
			return
		}
		h.s.shedForBudget(h.bytes)
	}
}

// shedForBudget closes the session as one of the largest queues when the
// server is over its outbound budget: what is queued is discarded, and an
// ERROR "slow consumer" and the close follow.
func (s *session) shedForBudget(held int) {
	if !s.fail(ending{reason: outcome.CloseOutboundBudget,
		detail: "the server's outbound budget is exhausted and this session held one of the largest backlogs; read faster or subscribe to less"}) {
		return
	}
	s.srv.out.shed.Add(1)
	s.srv.cfg.Logger.Warn("slow consumer disconnected for the outbound budget", "session", s.st.ID, "ip", s.st.RemoteIP.String(), "bytes", held)
}

// countStep is the granularity of a session's part of the server's
// outbound total: a session counts what it holds rounded down to a
// multiple of it, so that queuing a frame touches the shared counter only
// when the session's backlog crosses a step. A chat session, which holds
// a few hundred bytes until its writer runs, never does; the hot path
// stays free of shared writes. The total therefore understates what is
// held by less than countStep per session, one write batch. It must be
// a power of two.
const countStep = writeBatchSize

// recountLocked brings the outbox's part of the server's outbound total
// up to date with what it holds, and returns the new total when it
// changed, else 0.
func (o *outbox) recountLocked() int64 {
	c := (o.queuedBytes + o.inflightB) &^ (countStep - 1)
	d := c - o.counted
	if d == 0 {
		return 0
	}
	o.counted = c
	if o.releasing {
		o.budget.releasing.Add(int64(d))
	}
	return o.budget.total.Add(int64(d))
}

// releaseLocked marks an outbox closed as a slow consumer and discards
// its queue: what its writer still holds is on its way out, and no shed
// should close other sessions to make room for it.
func (o *outbox) releaseLocked() {
	if !o.releasing {
		o.releasing = true
		o.budget.releasing.Add(int64(o.counted))
	}
	o.discardQueueLocked()
}
