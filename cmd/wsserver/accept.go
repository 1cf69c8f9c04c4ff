package main

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/stompgate/stompgate/admission"
	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/metrics"
)

// The public listener's own bounds (admission.Listener): how many
// connections a second reach net/http, and how many may sit there
// without having sent their request. Past them a connection costs an
// accept, one write of a prebuilt 503 and a close.

// acceptRateFactor sizes the default -accept-rate: twice -admit-rate.
// Every admitted session takes one connection; the other half is for
// the handshakes the admission refuses itself (with the same
// Retry-After schedule), page loads and probes. A storm's connections
// beyond that could only be refused by the admission anyway, and each
// would cost a goroutine and a parsed request first.
const acceptRateFactor = 2

// acceptBurstFactor sizes the default -accept-burst: at least twice
// -admit-burst, so the connections of a burst the admission takes at
// once after a quiet spell all reach it, and at least a tenth of a
// second of -accept-rate.
const acceptBurstFactor = 2

// acceptRatePerAddrDivisor sizes the default -accept-rate-per-addr: a
// tenth of -accept-rate, at least minAcceptRatePerAddr. One address
// opening connections as fast as it can then takes a tenth of the
// listener's rate at most, and it takes ten addresses to empty the
// bucket for everyone else, where before one sufficed; a client's own
// handshakes are bounded far lower by the handshake limit behind.
const acceptRatePerAddrDivisor = 10

// minAcceptRatePerAddr is the floor of the default
// -accept-rate-per-addr: an office behind one NAT reconnecting together
// after a deploy, with its page loads, gets through in a second.
const minAcceptRatePerAddr = 20

// defaultMaxPendingNoRate is the default -max-pending-conns without an
// accept rate to derive it from: a thousand connections waiting for
// their request's headers, more than an instance accepts in the time a
// request takes when nobody holds them back.
const defaultMaxPendingNoRate = 1024

// minMaxPending is the floor of the default -max-pending-conns: a small
// rate still lets the health checks and a few slow clients wait
// together.
const minMaxPending = 64

// defaultMaxPendingPerAddr is the default -max-pending-conns-per-addr:
// sixteen connections without a request yet from one address, more than
// a whole office of nine behind one NAT opening its sessions at once
// (the handshake policy lets five of them through at once), a fraction
// of the pending bound so that one address cannot hold it.
const defaultMaxPendingPerAddr = 16

// minPendingTimeout and maxPendingTimeout bound -pending-conn-timeout:
// under 100 ms a client across an ocean has not sent its request yet;
// over a minute a connection that sends nothing holds its place as long
// as net/http's own header timeout would.
const (
	minPendingTimeout = 100 * time.Millisecond
	maxPendingTimeout = time.Minute
)

// acceptSettings are the public listener's bounds.
type acceptSettings struct {
	acceptRate        float64
	acceptBurst       int
	acceptRatePerAddr int
	maxPending        int
	maxPendingPerAddr int
	pendingTimeout    time.Duration
}

// acceptFlags registers the listener's bounds.
func (s *settings) acceptFlags(fs *flag.FlagSet) {
	fs.Float64Var(&s.acceptRate, "accept-rate", 0, "connections per second the public listener hands to HTTP; more are answered at accept with a prebuilt 503 and a Retry-After, written to the socket and closed, before any request is read (0: 2 × -admit-rate, none without an admission rate; -1: no bound)")
	fs.IntVar(&s.acceptBurst, "accept-burst", 0, "connections handed to HTTP at once after a quiet spell, on top of -accept-rate (0: 2 × -admit-burst, or a tenth of a second of -accept-rate when more)")
	fs.IntVar(&s.acceptRatePerAddr, "accept-rate-per-addr", 0, "of -accept-rate, the connections per second one client address passes (IPv6 by -ipv6-prefix; -trusted-proxies exempt); its excess gets the prebuilt 503 without spending the rate, so that one address cannot empty it for others (0: a tenth of -accept-rate, at least 20; -1: no bound)")
	fs.IntVar(&s.maxPending, "max-pending-conns", 0, "connections accepted that have not sent their request's headers yet; more get the prebuilt 503 at accept (0: one second of -accept-rate, at least 64, or 1024 without an accept rate; -1: no bound)")
	fs.IntVar(&s.maxPendingPerAddr, "max-pending-conns-per-addr", 0, "of -max-pending-conns, the most one client address holds (IPv6 by -ipv6-prefix; -trusted-proxies exempt; 0: 16); -1: no bound")
	fs.DurationVar(&s.pendingTimeout, "pending-conn-timeout", admission.DefaultPendingTimeout, "while a pending bound is full, a new connection first closes the pending ones older than this (100ms to 1m)")
}

// validateAccept checks the listener's bounds (defaults are derived
// from the admission in listenerConfig).
func (s *settings) validateAccept() error {
	switch {
	case math.IsNaN(s.acceptRate) || math.IsInf(s.acceptRate, 0) || (s.acceptRate < 0 && s.acceptRate != -1):
		return badSetting("accept-rate", s.acceptRate, "must be -1 (no bound), 0 (derived) or positive")
	case s.acceptBurst < 0:
		return badSetting("accept-burst", s.acceptBurst, "must not be negative (0: derived)")
	case s.acceptRatePerAddr < -1:
		return badSetting("accept-rate-per-addr", s.acceptRatePerAddr, "must be -1 (no bound), 0 (derived) or positive")
	case s.maxPending < -1:
		return badSetting("max-pending-conns", s.maxPending, "must be -1 (no bound), 0 (derived) or positive")
	case s.maxPendingPerAddr < -1:
		return badSetting("max-pending-conns-per-addr", s.maxPendingPerAddr, "must be -1 (no bound), 0 (the default, 16) or positive")
	case s.pendingTimeout < minPendingTimeout || s.pendingTimeout > maxPendingTimeout:
		return badSetting("pending-conn-timeout", s.pendingTimeout, "must be between 100ms and 1m")
	}
	return nil
}

// listenerConfig is the listener's configuration in force, its
// defaults derived from the gate's rate and burst.
func (s *settings) listenerConfig(gate *admission.Gate) (admission.ListenerConfig, error) {
	gc := gate.Config()
	cfg := admission.ListenerConfig{
		Burst:          s.acceptBurst,
		PendingTimeout: s.pendingTimeout,
		IPv6Prefix:     s.ipv6Prefix,
		Gate:           gate,
		NoResponse:     s.tlsCert != "",
	}
	switch {
	case s.acceptRate > 0:
		cfg.Rate = s.acceptRate
	case s.acceptRate == 0:
		cfg.Rate = acceptRateFactor * gc.Rate
	}
	if cfg.Rate > 0 && cfg.Burst == 0 {
		cfg.Burst = max(acceptBurstFactor*gc.Burst, int(math.Ceil(cfg.Rate/10)))
	}
	switch {
	case s.acceptRatePerAddr > 0:
		cfg.RatePerAddr = s.acceptRatePerAddr
	case s.acceptRatePerAddr == 0 && cfg.Rate > 0:
		cfg.RatePerAddr = max(int(math.Ceil(cfg.Rate/acceptRatePerAddrDivisor)), minAcceptRatePerAddr)
	}
	switch {
	case s.maxPending > 0:
		cfg.MaxPending = s.maxPending
	case s.maxPending == 0 && cfg.Rate > 0:
		cfg.MaxPending = max(int(math.Ceil(cfg.Rate)), minMaxPending)
	case s.maxPending == 0:
		cfg.MaxPending = defaultMaxPendingNoRate
	}
	switch {
	case s.maxPendingPerAddr > 0:
		cfg.MaxPendingPerAddr = s.maxPendingPerAddr
	case s.maxPendingPerAddr == 0:
		cfg.MaxPendingPerAddr = defaultMaxPendingPerAddr
	}
	trusted, err := clientip.ParseTrustedProxies(s.trustedProxies)
	if err != nil {
		return cfg, fmt.Errorf("-trusted-proxies (%s): %w", envName("trusted-proxies"), err)
	}
	cfg.TrustedProxies = trusted
	return cfg, nil
}

// publicServer returns the public HTTP server and the listener to serve
// it on: ln within its bounds (acceptBounds), each accepted socket's send
// buffer set, the HTTP timeouts counted. TLS, when configured, goes
// around the listener returned. On error ln is returned as it was.
func (a *app) publicServer(st *settings, ln net.Listener, logger *slog.Logger) (*http.Server, net.Listener, error) {
	acc, err := a.acceptBounds(st, ln, logger)
	if err != nil {
		return nil, ln, err
	}
	hs := newHTTPServer(st, a.handler, logger)
	out := countTimeouts(a.stomp.Listener(acc), hs, a.metrics)
	wireAccept(acc, hs)
	return hs, out, nil
}

// acceptBounds wraps the public listener ln with its bounds, counted in
// the metrics, and logs them once. Serve hs on the listener returned
// after wireAccept.
func (a *app) acceptBounds(st *settings, ln net.Listener, logger *slog.Logger) (*admission.Listener, error) {
	cfg, err := st.listenerConfig(a.gate)
	if err != nil {
		return nil, err
	}
	cfg.Observer = listenerObserver{a.metrics}
	l, err := admission.NewListener(ln, cfg)
	if err != nil {
		return nil, fmt.Errorf("-accept-rate / -max-pending-conns: %w", err)
	}
	c := l.Config()
	logger.Info("accept bounds",
		"accept_rate", c.Rate, "accept_burst", c.Burst, "accept_rate_per_addr", c.RatePerAddr, "max_pending_conns", c.MaxPending,
		"max_pending_conns_per_addr", c.MaxPendingPerAddr, "pending_conn_timeout", c.PendingTimeout.String(),
		"refusal", map[bool]string{true: "close (TLS)", false: "503"}[c.NoResponse])
	return l, nil
}

// wireAccept has hs report to l when a connection's first request
// reaches its handler or the connection ends before one (after
// countTimeouts, whose ConnState it keeps).
func wireAccept(l *admission.Listener, hs *http.Server) {
	hs.Handler = l.Handler(hs.Handler)
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, s http.ConnState) {
		if prev != nil {
			prev(c, s)
		}
		l.ConnState(c, s)
	}
}

// listenerObserver counts the listener's refusals and evictions.
type listenerObserver struct{ m *metrics.Metrics }

func (o listenerObserver) Refused(reason string) {
	o.m.ListenerRefused(metrics.ListenerReasonOf(reason))
}

func (o listenerObserver) Evicted() { o.m.ListenerEvicted() }
