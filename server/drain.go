package server

import (
	"context"
	"time"
)

// Drain takes the server out of rotation gently, as nats-server's
// lame-duck mode does. At once, Ready reports false, so /readyz answers
// 503 and load balancers stop sending new clients here; sessions keep
// running. After grace, new handshakes are refused and the open sessions
// are closed one at a time, spread evenly over period, each with ERROR
// "server shutting down" and close 1001 after what is queued for it. Their
// clients therefore reconnect to the other instances over the period,
// not all in the same second, where they would trip the handshake limit
// together. Each ERROR also says when to come back (retry-after, whole
// seconds drawn uniformly from 1 to the window): when the period is too
// short for the sessions to come back at Config.RetryRate, the window
// holds what it lacks, so closures and retries together arrive at about
// that rate.
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
	gap := period / time.Duration(len(open))
	window := s.shutdownRetryWindow(len(open), period)
	for i, ss := range open {
		if i > 0 && !s.wait(ctx, gap) {
			return ctx.Err()
		}
		ss.shutdown(window)
	}
	return nil
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
