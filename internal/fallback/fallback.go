// Package fallback is the Redis outage state shared by the stores that
// keep serving from process memory while Redis is unreachable (the
// handshake limiter, the session caps): whether Redis is failing (Health,
// judged from the stores' own round trips and confirmed by a PING before
// timeouts alone are believed), whether they are in fallback mode, which
// call may try Redis again (one per RetryInterval), and a background
// probe that PINGs Redis while in fallback, so that the mode ends (and
// its gauge returns to 0) even when no call arrives.
package fallback

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultConfirmTimeout is the default Config.ConfirmTimeout: twenty
// times the stores' 50 ms call bound. A Redis that does not answer a
// PING within a second is failing for any client; a server whose CPU
// is saturated still reads an answer within it.
const DefaultConfirmTimeout = time.Second

// Outcome is what a store does with one call made through Try.
type Outcome uint8

const (
	// Answered: Redis answered; the call's result holds.
	Answered Outcome = iota
	// Fallback: the store is in fallback mode, because Redis is judged
	// failing: it answers as its fail mode says (from process memory, or
	// by refusing).
	Fallback
	// Local: the call failed but Redis is not judged failing (a timeout
	// that may be this server's CPU, or one confirmation under way): the
	// store answers from its own state in process memory, whatever its
	// fail mode, since the failure says nothing about Redis.
	Local
)

// Config configures a Switch. Every field is required except Health,
// ConfirmTimeout, ProbeTimeout, Confirmed and Now.
type Config struct {
	// RetryInterval is how often, in fallback mode, one call may try
	// Redis again.
	RetryInterval time.Duration
	// ProbeInterval is how often the background probe ticks; negative
	// turns the probe off, leaving calls alone to find Redis back.
	ProbeInterval time.Duration
	// ProbeTimeout bounds each PING of the background probe. Zero or
	// less means ConfirmTimeout.
	ProbeTimeout time.Duration
	// Health judges the store's round trips. Nil means every failed call
	// is evidence that Redis is failing.
	Health *Health
	// ConfirmTimeout bounds the PING that confirms a Health that only
	// TimedOut before fallback mode starts: one such PING at a time, on
	// a goroutine of the Switch; only a PING that fails or times out
	// while no other round trip is answered starts fallback mode, one
	// that answers voids the timeouts. Zero or less means
	// DefaultConfirmTimeout.
	ConfirmTimeout time.Duration
	// Ping asks Redis whether it answers, within ctx's deadline.
	Ping func(ctx context.Context) error
	// Name prefixes the two log lines, one when fallback mode starts
	// (Warn, with the error, saying Mode: what the store does meanwhile)
	// and one when it ends (Info).
	Name, Mode string
	Logger     *slog.Logger
	// Changed is told when fallback mode starts (true) and ends (false),
	// once each; StoreError about each failed Redis call made through
	// Try, a probe PING or a confirmation PING; Confirmed, if not nil,
	// about each confirmation's outcome (true: Redis answered).
	Changed    func(active bool)
	StoreError func(err error)
	Confirmed  func(answered bool)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// UseRedis points c at a store's Redis: health judges the store's round
// trips, each probe PING of client is bounded by timeout, the store's own
// bound on a round trip.
func (c *Config) UseRedis(client redis.UniversalClient, health *Health, timeout time.Duration) {
	c.Health = health
	c.ProbeTimeout = timeout
	c.Ping = func(ctx context.Context) error { return client.Ping(ctx).Err() }
}

// Switch is the fallback state of one store. The zero value is not
// usable; call New. A Switch is safe for concurrent use.
type Switch struct {
	cfg Config

	active atomic.Bool
	// next is the time (Unix ns) from which, in fallback mode, the next
	// call may try Redis; the call that advances it does.
	next atomic.Int64

	// ctx ends on Close; it bounds the probe and the confirmation.
	ctx    context.Context
	cancel context.CancelFunc
	// goroutines tracks the probe and the confirmation.
	goroutines sync.WaitGroup
	// mu guards probing, confirming and closed.
	mu         sync.Mutex
	probing    bool
	confirming bool
	closed     bool
}

// New returns a Switch, not in fallback mode.
func New(cfg Config) *Switch {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ConfirmTimeout <= 0 {
		cfg.ConfirmTimeout = DefaultConfirmTimeout
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = cfg.ConfirmTimeout
	}
	if cfg.Confirmed == nil {
		cfg.Confirmed = func(bool) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Switch{cfg: cfg, ctx: ctx, cancel: cancel}
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
// success ends fallback mode; a failure is told to StoreError and judged
// (see Judge). call must report its round trip to the Health itself. The
// error is ctx's when ctx ended during call: the caller gave up (client
// gone, server shutting down), which says nothing about Redis, so the
// state is left alone.
func (s *Switch) Try(ctx context.Context, now time.Time, call func() error) (Outcome, error) {
	if !s.ShouldTry(now) {
		return Fallback, nil
	}
	err := call()
	if err == nil {
		s.Succeeded()
		return Answered, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Answered, ctxErr
	}
	s.cfg.StoreError(err)
	if s.Judge(now, err) {
		return Fallback, nil
	}
	return Local, nil
}

// Judge decides, after a Redis call that failed with err at now while
// its caller was still there, whether the store must fall back, and
// reports it. In fallback mode it must (the mode is prolonged). Outside
// it, a Health that is Broken starts fallback mode at once; one that
// only TimedOut starts a confirmation PING, unless one runs, and the
// store answers locally meanwhile; otherwise the failure is a hiccup
// and the store answers locally. With no Health every failure starts
// fallback mode.
func (s *Switch) Judge(now time.Time, err error) bool {
	h := s.cfg.Health
	switch {
	case s.active.Load(), h == nil, h.Broken():
		s.Failed(now, err)
		return true
	case h.TimedOut():
		s.confirm(err)
	}
	return false
}

// confirm starts the confirmation PING unless one runs or the Switch is
// closed. cause is the timeout that made the Health suspect Redis.
func (s *Switch) confirm(cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confirming || s.closed {
		return
	}
	s.confirming = true
	s.goroutines.Add(1)
	go s.runConfirm(cause)
}

// runConfirm PINGs Redis within ConfirmTimeout: an answer voids the
// timeouts, a failure starts fallback mode. A PING that timed out while
// another round trip of the store was answered is no failure either: a
// hung Redis answers nobody, and a server so busy that it reads the
// PING's answer late (thousands of connections on two cores do that)
// still reads the others'. One whose timeout was noticed more than a
// ConfirmTimeout late, like such a round trip (see Health.RoundTrip), is
// this server's CPU and proves nothing: the next call that times out
// confirms again. One cut short by Close proves nothing either.
func (s *Switch) runConfirm(cause error) {
	defer s.goroutines.Done()
	defer func() {
		s.mu.Lock()
		s.confirming = false
		s.mu.Unlock()
	}()
	h := s.cfg.Health
	answers := h.answers.Load()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ConfirmTimeout)
	sent := time.Now()
	err := s.cfg.Ping(ctx)
	took := time.Since(sent)
	cancel()
	switch {
	case s.ctx.Err() != nil:
	case err == nil:
		h.answered()
		s.cfg.Confirmed(true)
	case IsTimeout(err) && h.answers.Load() != answers:
		s.cfg.Confirmed(true)
	case IsTimeout(err) && took > 2*s.cfg.ConfirmTimeout:
	default:
		s.cfg.StoreError(err)
		s.cfg.Confirmed(false)
		s.Failed(s.cfg.Now(), fmt.Errorf("%w, and a PING within %v failed too: %w", cause, s.cfg.ConfirmTimeout, err))
	}
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

// Close stops the probe and a confirmation under way, and waits for
// them. Calls keep working afterwards, without a probe or confirmation
// (a Health that only TimedOut then keeps the store answering locally).
// Close is idempotent.
func (s *Switch) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.cancel()
	}
	s.mu.Unlock()
	s.goroutines.Wait()
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
	s.goroutines.Add(1)
	go s.probe()
}

// probe PINGs Redis every ProbeInterval while in fallback mode, unless a
// call tried it within RetryInterval, and ends fallback mode on the first
// answer. Each PING is a round trip reported to the Health. It returns
// when fallback mode ended or on Close.
func (s *Switch) probe() {
	defer s.goroutines.Done()
	t := time.NewTicker(s.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			s.endProbe(true)
			return
		case <-t.C:
		}
		if s.active.Load() && s.due(s.cfg.Now()) {
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ProbeTimeout)
			sent := time.Now()
			err := s.cfg.Ping(ctx)
			cancel()
			if s.cfg.Health != nil {
				s.cfg.Health.RoundTrip(s.ctx, time.Since(sent), err)
			}
			if err != nil {
				if s.ctx.Err() == nil {
					s.cfg.StoreError(err)
				}
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
