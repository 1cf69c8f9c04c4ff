package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/policy"
	"github.com/stompgate/stompgate/sessioncap"
)

// The session caps: how many sessions one client IP (the policy's
// max_connections on the WebSocket zone) and one authenticated principal
// (-max-sessions-per-principal) hold open at once, across every instance
// sharing -redis-url, or per instance without it.

// newSessionCaps builds the caps' Limiter: leases in Redis when the app
// has a Redis client, process memory otherwise, failing as -limiter-fail
// says. It sets a.caps (and a.capStore with Redis).
func (a *app) newSessionCaps(st *settings, logger *slog.Logger) error {
	obs := capObserver{a.metrics}
	cfg := sessioncap.Config{FailClosed: st.limiterFail == "closed", Logger: logger, Observer: obs}
	if a.redis != nil {
		rcfg := sessioncap.RedisConfig{
			Client:   a.redis,
			LeaseTTL: st.sessionLeaseTTL,
			Timeout:  st.redisTimeout,
			Observer: obs,
			Logger:   logger,
		}
		st.capsConfig(&cfg, &rcfg)
		rs, err := sessioncap.NewRedisStore(rcfg)
		if err != nil {
			return fmt.Errorf("-session-lease-ttl: %w", err)
		}
		a.capStore = rs
		cfg.Redis = rs
	}
	l, err := sessioncap.New(cfg)
	if err != nil {
		return err
	}
	a.caps = l
	return nil
}

// capHandshakes puts the per-client cap of zone (IPv6 clients keyed by
// their ipv6Prefix) in front of next (the STOMP
// server), or returns next when the zone sets no max_connections.
func (a *app) capHandshakes(zone policy.Zone, trusted []netip.Prefix, ipv6Prefix int, logger *slog.Logger, next http.Handler) (http.Handler, error) {
	if zone.MaxConnections == 0 {
		return next, nil
	}
	return sessioncap.Middleware(sessioncap.MiddlewareConfig{
		Limiter:        a.caps,
		Zone:           zone.Name,
		Max:            zone.MaxConnections,
		TrustedProxies: trusted,
		IPv6Prefix:     ipv6Prefix,
		PrefixRefused:  func() { a.metrics.IPv6PrefixRefused(metrics.PrefixLimitSessionCap) },
		// The nginx config renders the same Retry-After from the policy.
		RetryAfter: policy.CapRetryAfter,
		Logger:     logger,
	}, next)
}

// principalCapStage is the per-principal cap for the chain, right after
// the principal stage, or nil with -max-sessions-per-principal 0. With
// -session-cap-displace, disconnect ends the sessions it displaces.
func principalCapStage(st *settings, caps *sessioncap.Limiter, disconnect func(sessionID string)) (interceptor.Stage, error) {
	if st.maxSessionsPerPrincipal == 0 {
		return nil, nil
	}
	s, err := sessioncap.NewPrincipalStage(sessioncap.PrincipalConfig{
		Limiter:    caps,
		Max:        st.maxSessionsPerPrincipal,
		Displace:   st.sessionCapDisplace,
		Disconnect: disconnect,
	})
	if err != nil {
		return nil, fmt.Errorf("-max-sessions-per-principal: %w", err)
	}
	return s, nil
}

// displacedDetail is the ERROR body of a session that a newer session of
// its principal displaced at the cap.
const displacedDetail = "a newer session of this principal took this one's place (-max-sessions-per-principal)"

// disconnectDisplaced ends the session id that the per-principal cap
// displaced: here if it runs here, else on the instance that holds it,
// through the disconnect channel. The publish is bounded by
// -redis-timeout; a lost request leaves the session open until it ends
// by itself, its principal one over the cap meanwhile.
func (a *app) disconnectDisplaced(id string, timeout time.Duration) {
	if a.stomp != nil && a.stomp.Disconnect("", id, displacedDetail) > 0 {
		return
	}
	if a.fanout == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = a.fanout.Disconnect(ctx, "", id, displacedDetail)
}

// closeSessionCaps stops the caps' probe and lease renewer. Call it after
// the sessions have ended (and released their slots).
func (a *app) closeSessionCaps() {
	if a.caps != nil {
		_ = a.caps.Close()
	}
	if a.capStore != nil {
		_ = a.capStore.Close()
	}
}

// capObserver adapts metrics.Metrics to sessioncap.Observer. A refusal
// at the per-IP cap is a handshake result; one at the per-principal cap is
// counted when the server closes the session (reason session_cap).
type capObserver struct{ m *metrics.Metrics }

var _ sessioncap.Observer = capObserver{}

func (o capObserver) Decision(scope string, d sessioncap.Decision) {
	if d.Local {
		o.m.SessionCapLocalDecision()
	}
	switch {
	case d.Allowed:
		o.m.SessionCapAcquired(metrics.CapScopeOf(scope))
	case scope == sessioncap.ScopeIP:
		o.m.Handshake(d.Handshake())
	}
}

func (o capObserver) Released(scope string) { o.m.SessionCapReleased(metrics.CapScopeOf(scope)) }
func (o capObserver) Fallback(active bool)  { o.m.SetSessionCapFallback(active) }
func (o capObserver) Confirmation(ok bool)  { o.m.SessionCapConfirmation(ok) }
func (o capObserver) StoreError(error)      { o.m.SessionCapStoreError() }
func (o capObserver) LeasesRestored(n int)  { o.m.SessionCapLeasesRestored(n) }
func (o capObserver) Displaced(scope string, n int) {
	o.m.SessionCapDisplaced(metrics.CapScopeOf(scope), n)
}
