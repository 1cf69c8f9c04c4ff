package server

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/randid"
	"github.com/stompgate/stompgate/internal/retryafter"
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Server accepts WebSocket connections and serves STOMP sessions on them.
// It is an http.Handler for the WebSocket path; put the handshake limiter
// in front of it.
//
// http.Server.Shutdown neither closes nor waits for hijacked connections,
// so call Server.Shutdown beside it: it refuses new sessions, tells every
// session (ERROR frame, close 1001) and waits for them to end.
//
// A Server is safe for concurrent use.
type Server struct {
	cfg Config
	// subprotocols are stompframe's, most preferred first; a client that
	// offers none is served as STOMP 1.2.
	subprotocols []string

	reg registry

	// out bounds the bytes queued for writing across sessions.
	out outboundBudget

	// backend is Config.Observer when it also counts the backend events
	// (BackendObserver), resolved once; nil otherwise.
	backend BackendObserver
	// backlog is Config.Observer when it also counts app backlog
	// refusals (AppBacklogObserver), resolved once; nil otherwise.
	backlog AppBacklogObserver
	// input is Config.Observer when it also counts inbound-budget
	// pauses (InputObserver), resolved once; nil otherwise.
	input InputObserver
	// dest is Config.Observer when it also counts what destination
	// options do (DestinationObserver), resolved once; nil otherwise.
	dest DestinationObserver
	// latency is Config.Observer when it also times deliveries
	// (DeliveryObserver), resolved once; nil otherwise.
	latency DeliveryObserver

	// origins logs the handshakes refused as cross-origin.
	origins originLog

	// sleep and now, when set by a test, replace the timer Drain waits
	// on and the clock it paces its closes by.
	sleep func(ctx context.Context, d time.Duration) bool
	now   func() time.Time

	// mu guards shutting and the Add side of sessions, so that no session
	// starts after Shutdown began waiting.
	mu       sync.Mutex
	shutting bool
	draining bool // Drain began: not ready, though still serving
	sessions sync.WaitGroup
}

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, subprotocols: stompframe.Subprotocols()}
	s.out.limit = int64(max(c.OutboundTotalBytes, 0))
	s.backend, _ = c.Observer.(BackendObserver)
	s.backlog, _ = c.Observer.(AppBacklogObserver)
	s.input, _ = c.Observer.(InputObserver)
	s.dest, _ = c.Observer.(DestinationObserver)
	s.latency, _ = c.Observer.(DeliveryObserver)
	s.reg.init()
	return s, nil
}

// Ready reports whether the server takes new sessions.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.shutting && !s.draining
}

// Sessions returns the number of open sessions.
func (s *Server) Sessions() int { return s.reg.len() }

// sessionIDBytes is the randomness of a session id: 120 bits, so that an
// id seen by nobody but its session cannot be guessed, and ids never
// repeat across instances or restarts.
const sessionIDBytes = 15

// newSessionID returns a random session id (24 base32 characters).
func newSessionID() string { return randid.New(sessionIDBytes) }

// ServeHTTP upgrades the request to a WebSocket and starts a STOMP session
// on it, on a goroutine of its own, so that the HTTP server's connection
// goroutine, request and buffers are released while the session lives.
// It returns 503 with a Retry-After of 1 or 2 s, drawn at random, once
// Shutdown has begun.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		s.cfg.Observer.Handshake(outcome.HandshakeRejectedShutdown)
		runAll(sessionEndFuncs(r.Context()))
		w.Header().Set("Retry-After", retryafter.Header(retryafter.Jittered(time.Second, nil)))
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	s.sessions.Add(1)
	s.mu.Unlock()
	started := false
	onEnd := sessionEndFuncs(r.Context())
	defer func() {
		if !started {
			s.sessions.Done()
			runAll(onEnd)
		}
	}()

	conn, err := wsconn.Accept(w, r, &wsconn.AcceptOptions{
		Subprotocols:   s.subprotocols,
		OriginPatterns: s.cfg.OriginPatterns,
		Compression:    s.cfg.Compression.acceptOptions(),
	})
	if err != nil {
		// Accept has written the HTTP error response.
		var he *wsconn.HandshakeError
		if errors.As(err, &he) && he.Status == http.StatusForbidden {
			s.cfg.Observer.Handshake(outcome.HandshakeRejectedOrigin)
			s.origins.refused(s.cfg.Logger, r, time.Now())
			return
		}
		s.cfg.Observer.Handshake(outcome.HandshakeUpgradeFailed)
		s.cfg.Logger.Debug("websocket accept failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	s.cfg.Observer.Handshake(outcome.HandshakeAccepted)
	conn.SetReadLimit(s.cfg.Limits.MaxFrameSize)
	conn.SetWriteTimeout(s.cfg.WriteTimeout)

	var ip netip.Addr
	ok := false
	if s.cfg.ClientIP != nil {
		ip, ok = s.cfg.ClientIP(r)
	}
	if !ok {
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			ip = ap.Addr().Unmap()
		}
	}
	sess := newSession(s, conn, ip, r.URL.Query())
	sess.onEnd = onEnd
	if v, ok := stompframe.SubprotocolVersion(conn.Subprotocol()); ok {
		sess.maxVersion = v
	}
	s.reg.add(sess)
	s.cfg.Observer.SessionOpened()
	if conn.Compressed() {
		s.cfg.Observer.SessionCompressed()
	}
	// Shutdown marks the server before it walks the registry, so a
	// session either is in the registry when the walk happens or sees the
	// mark here.
	s.mu.Lock()
	shutting := s.shutting
	s.mu.Unlock()
	if shutting {
		sess.shutdown(s.shutdownRetryWindow(s.reg.len(), 0))
	}
	started = true
	go func() {
		defer s.sessions.Done()
		sess.serve()
	}()
}

// Shutdown stops taking new sessions, sends every open session an ERROR
// frame ("server shutting down", with a retry-after header drawn over a
// window as long as Config.RetryRate needs for them all) after what is
// already queued for it, closes it with status 1001, and waits until all sessions have ended or
// ctx is done. When ctx ends first, the remaining connections are closed
// at once and ctx.Err() is returned. Calling Shutdown again waits again.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting = true
	s.mu.Unlock()

	window := s.shutdownRetryWindow(s.reg.len(), 0)
	s.reg.each(func(ss *session) { ss.shutdown(window) })

	done := make(chan struct{})
	go func() {
		s.sessions.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.reg.each(func(ss *session) { ss.abort(outcome.CloseShutdown) })
		<-done
		return ctx.Err()
	}
}

// SessionCounts returns the frame accounting of the open session with the
// given id (the CONNECTED session header): received, passed and dropped.
func (s *Server) SessionCounts(id string) (interceptor.Counts, bool) {
	sess, ok := s.reg.get(id)
	if !ok {
		return interceptor.Counts{}, false
	}
	return sess.st.Counts(), true
}
