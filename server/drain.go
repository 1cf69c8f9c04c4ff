package server

import (
	"context"
	"time"
)

// drainTick is the least time between two batches of closes in a
// drain: a timer per session (10,000 sessions over 10 s are 1 ms apart)
// overruns on a busy machine, and the overruns add up until most
// sessions are still open at the deadline. Waking at most every 10 ms
// and closing every session whose time has come keeps to the period
// however late each wake-up is, in batches of period/N's share of 10 ms
// (10 sessions in the example): a hundred wake-ups a second cost
// nothing, and 10 ms is well under the second a client's own backoff
// spreads its retry over.
const drainTick = 10 * time.Millisecond

// Drain takes the server out of rotation gently, as nats-server's
// lame-duck mode does. At once, Ready reports false, so /readyz answers
// 503 and load balancers stop sending new clients here; sessions keep
// running. After grace, new handshakes are refused and the open sessions
// are closed spread evenly over period, each with ERROR "server shutting
// down" and close 1001 after what is queued for it: session k of N is
// due k×period/N after the grace ended, and each wake-up (at most every
// drainTick) closes every session due by then, so late wake-ups never
// push the last one past the period. Their clients therefore reconnect
// to the other instances over the period, not all in the same second,
// where they would trip the handshake limit together. Each ERROR also
// says when to come back (retry-after, whole seconds drawn uniformly from
// 1 to the window): when the period is too short for the sessions to come
// back at Config.RetryRate, the window holds what it lacks, so closures
// and retries together arrive at about that rate.
//
// Drain returns when every session has been told, or with ctx.Err() when
// ctx ends first. Call Shutdown after it to wait for the sessions to end
// (and to end the ones that arrived during grace). A server with no open
// session skips the grace: there is nobody to spread.
func (s *Server) Drain(ctx context.Context, grace, period time.Duration) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	if s.reg.len() > 0 && !s.wait(ctx, grace) {
		return ctx.Err()
	}
	s.mu.Lock()
	s.shutting = true
	s.mu.Unlock()

	var open []*session
	s.reg.each(func(ss *session) { open = append(open, ss) })
	if len(open) == 0 {
		return nil
	}
	window := s.shutdownRetryWindow(len(open), period)
	now := s.now
	if now == nil {
		now = time.Now
	}
	if !paceCloses(ctx, len(open), period, now, s.wait, func(i int) { open[i].shutdown(window) }) {
		return ctx.Err()
	}
	return nil
}

// paceCloses calls end(k) for k from 0 to n-1, session k when
// k×period/n has passed since it began by now, sleeping with sleep
// between batches (until the next session is due, at least drainTick).
// It reports false when a sleep was cut short (ctx ended), with the
// sessions not yet due left open.
func paceCloses(ctx context.Context, n int, period time.Duration, now func() time.Time,
	sleep func(context.Context, time.Duration) bool, end func(k int)) bool {
	// due is when session k is due, from the start.
	due := func(k int) time.Duration {
		return time.Duration(float64(period) * float64(k) / float64(n))
	}
	start := now()
	for k := 0; ; {
		elapsed := now().Sub(start)
		for ; k < n && due(k) <= elapsed; k++ {
			end(k)
		}
		if k == n {
			return true
		}
		if !sleep(ctx, max(due(k)-elapsed, drainTick)) {
			return false
		}
	}
}

// wait sleeps for d unless ctx ends first, and reports whether it slept
// the whole time. Tests replace it through Server.sleep.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if s.sleep != nil {
		return s.sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
