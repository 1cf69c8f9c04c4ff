// Package fallback is the Redis outage state shared by the stores that
// keep serving from process memory while Redis is unreachable (the
// handshake limiter, the session caps): whether they are in fallback
// mode, which call may try Redis again (one per RetryInterval), and a
// background probe that PINGs Redis while in fallback, so that the mode
// ends (and its gauge returns to 0) even when no call arrives.
package fallback

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config configures a Switch. Every field is required except Now.
type Config struct {
	// RetryInterval is how often, in fallback mode, one call may try
	// Redis again.
	RetryInterval time.Duration
	// ProbeInterval is how often the background probe ticks; negative
	// turns the probe off, leaving calls alone to find Redis back.
	ProbeInterval time.Duration
	// Ping asks Redis whether it answers; it bounds itself.
	Ping func(ctx context.Context) error
	// Name prefixes the two log lines, one when fallback mode starts
	// (Warn, with the error, saying Mode: what the store does meanwhile)
	// and one when it ends (Info).
	Name, Mode string
	Logger     *slog.Logger
	// Changed is told when fallback mode starts (true) and ends (false),
	// once each; StoreError about each failed Redis call, a probe PING or
	// a call made through Try.
	Changed    func(active bool)
	StoreError func(err error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Switch is the fallback state of one store. The zero value is not
// usable; call New. A Switch is safe for concurrent use.
type Switch struct {
	cfg Config

	active atomic.Bool
	// next is the time (Unix ns) from which, in fallback mode, the next
	// call may try Redis; the call that advances it does.
	next atomic.Int64

	stop   chan struct{}
	probes sync.WaitGroup
	// mu guards probing and closed.
	mu      sync.Mutex
	probing bool
	closed  bool
}

// New returns a Switch, not in fallback mode.
func New(cfg Config) *Switch {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Switch{cfg: cfg, stop: make(chan struct{})}
}

// Active reports whether the store is in fallback mode.
func (s *Switch) Active() bool { return s.active.Load() }

// ShouldTry reports whether a call at now should use Redis: always
// outside fallback mode, and for one call per RetryInterval inside it.
func (s *Switch) ShouldTry(now time.Time) bool {
	return !s.active.Load() || s.due(now)
}

// Try runs call, one Redis operation of the store, unless the store is
// in fallback mode and no retry is due at now, and keeps the state: a
// success ends fallback mode, a failure is told to StoreError and starts
// it. It reports whether the caller must answer without Redis. The error
// is ctx's when ctx ended during call: the caller gave up (client gone,
// server shutting down), which says nothing about Redis, so the state is
// left alone.
func (s *Switch) Try(ctx context.Context, now time.Time, call func() error) (useFallback bool, err error) {
	if !s.ShouldTry(now) {
		return true, nil
	}
	err = call()
	if err == nil {
		s.Succeeded()
		return false, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	s.cfg.StoreError(err)
	s.Failed(now, err)
	return true, nil
}

// due reports whether this call may try Redis in fallback mode; at most
// one per RetryInterval gets true.
func (s *Switch) due(now time.Time) bool {
	next := s.next.Load()
	if now.UnixNano() < next {
		return false
	}
	return s.next.CompareAndSwap(next, now.Add(s.cfg.RetryInterval).UnixNano())
}

// Failed records a Redis failure at now: the next try waits a
// RetryInterval, and fallback mode starts (Entered, the probe) unless it
// already runs.
func (s *Switch) Failed(now time.Time, err error) {
	s.next.Store(now.Add(s.cfg.RetryInterval).UnixNano())
	if s.active.CompareAndSwap(false, true) {
		s.cfg.Logger.Warn(s.cfg.Name+": redis unavailable, entering fallback mode: "+s.cfg.Mode,
			"err", err, "retry_interval", s.cfg.RetryInterval)
		s.cfg.Changed(true)
		s.startProbe()
	}
}

// Succeeded records a Redis answer: fallback mode ends if it ran.
func (s *Switch) Succeeded() {
	if s.active.CompareAndSwap(true, false) {
		s.cfg.Logger.Info(s.cfg.Name + ": redis answers again, leaving fallback mode")
		s.cfg.Changed(false)
	}
}

// Close stops the probe and waits for it. Calls keep working afterwards,
// without a probe. Close is idempotent.
func (s *Switch) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	s.probes.Wait()
}

// startProbe starts the probe unless it runs, is turned off, or the
// Switch is closed.
func (s *Switch) startProbe() {
	if s.cfg.ProbeInterval < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probing || s.closed {
		return
	}
	s.probing = true
	s.probes.Add(1)
	go s.probe()
}

// probe PINGs Redis every ProbeInterval while in fallback mode, unless a
// call tried it within RetryInterval, and ends fallback mode on the first
// answer. It returns when fallback mode ended or on Close.
func (s *Switch) probe() {
	defer s.probes.Done()
	t := time.NewTicker(s.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.endProbe(true)
			return
		case <-t.C:
		}
		if s.active.Load() && s.due(s.cfg.Now()) {
			if err := s.cfg.Ping(context.Background()); err != nil {
				s.cfg.StoreError(err)
			} else {
				s.Succeeded()
			}
		}
		if s.endProbe(false) {
			return
		}
	}
}

// endProbe marks the probe ended and reports true when forced or when
// fallback mode is over or the Switch closed; checked under mu so that a
// startProbe racing with the end is never lost.
func (s *Switch) endProbe(force bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !force && s.active.Load() && !s.closed {
		return false
	}
	s.probing = false
	return true
}

// FollowCluster schedules a reload of a Cluster client's slot map after a
// failed call; on any other client it does nothing. A connection that
// stops answering (a paused or partitioned master) is already bounded by
// the caller's timeout and dropped from the pool when it times out
// (ContextTimeoutEnabled), but go-redis learns that a replica took over
// only from a MOVED answer or its periodic reload (60 s by default), and a
// silent master sends no MOVED: without this a store would fail for up to
// a minute after the failover completed. go-redis runs one reload at a
// time, at most one per 200 ms, however many calls fail.
func FollowCluster(c redis.UniversalClient) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		cc.ReloadState(context.Background())
	}
}

// ContextTimeoutEnabled reports whether c honours context deadlines on
// socket reads and writes, as a store's per-call Timeout needs: without
// it a hung server holds each call for the client's ReadTimeout (3 s by
// default). Clients of unknown types are trusted.
func ContextTimeoutEnabled(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	default:
		return true
	}
}
