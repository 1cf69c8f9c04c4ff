package sessioncap

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/internal/retryafter"
	"github.com/stompgate/stompgate/server"
)

// DefaultRetryAfter is the default MiddlewareConfig.RetryAfter. A cap
// frees a slot when a session ends, which no rate predicts; the refusal a
// person meets at the cap is mostly a page reload whose new socket arrives
// before the old one's close, seen within a round trip, so a retry 2
// seconds later passes. A program that also renders an nginx limit_conn
// should pass the Retry-After nginx announces, so both answer alike.
const DefaultRetryAfter = 2 * time.Second

// DefaultAcquireTimeout bounds one Acquire made for a handshake or a
// CONNECT beyond the Redis call's own timeout: a session is never held
// longer than this waiting for its slot. A second is twenty times the
// Redis call's default bound: a handshake waits that long only when this
// instance is too busy to read the answer (a reconnect storm on two
// cores), and is then refused as busy (see Middleware).
const DefaultAcquireTimeout = time.Second

// MiddlewareConfig configures Middleware. Limiter, Zone and Max are
// required.
type MiddlewareConfig struct {
	// Limiter takes and gives back the slots.
	Limiter *Limiter
	// Zone names the cap (the policy zone, "ws_handshake"); each zone
	// counts separately.
	Zone string
	// Max is the most sessions one client may hold open at once: the
	// zone's max_connections. It must be at least 1.
	Max int
	// RetryAfter is the least Retry-After announced on a refusal,
	// rounded up to whole seconds; each refusal draws its own uniformly
	// from RetryAfter to RetryAfter plus half of it (at least 1 s, at
	// most 10 s), so that clients refused together do not come back
	// together. Zero means DefaultRetryAfter; negative is an error.
	RetryAfter time.Duration
	// TrustedProxies are the peers whose X-Real-IP and X-Forwarded-For
	// are believed when no handshake middleware in front has already put
	// the client address in the request's context (clientip.AddrFrom).
	TrustedProxies []netip.Prefix
	// IPv6Prefix is the prefix length, in bits, by which IPv6 clients are
	// keyed when no handshake middleware in front has put the client key
	// in the request's context (clientip.KeyFrom): every address
	// of one prefix shares one cap. Zero means
	// clientip.DefaultIPv6Prefix (/64); 128 caps each address by itself;
	// outside 0..128 is an error. Set it as the handshake middleware's.
	IPv6Prefix int
	// PrefixRefused, if not nil, is called for each refusal of a client
	// keyed by an IPv6 prefix rather than its address. It must not block.
	PrefixRefused func()
	// Logger receives failures that are not refusals. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Rand returns uniform values in [0, 1) for the Retry-After draws.
	// Nil means math/rand/v2's Float64.
	Rand func() float64
	// AcquireTimeout bounds the wait for one handshake's decision. Zero
	// means DefaultAcquireTimeout; negative is an error.
	AcquireTimeout time.Duration
}

// Middleware returns a handler that caps the sessions each client (an
// IPv4 address or an IPv6 prefix, see clientip.Key) holds open, then calls next, which must be a *server.Server or pass the
// request's context on to one: the slot is given back through
// server.OnSessionEnd when the session ends, or before next returns when
// the request never became a session.
//
// A request over the cap gets 429 Too Many Requests with a short text
// body and Retry-After: <seconds, jittered above RetryAfter>, before any
// WebSocket work, as nginx's limit_conn answers it.
//
// A request whose decision is not made within AcquireTimeout gets 503
// Service Unavailable with the same jittered Retry-After, and is counted
// through the Limiter's Observer as a Decision with TimedOut
// (outcome.HandshakeSessionCapTimeout). The wait is far beyond the Redis
// call's own bound, past which the Limiter already decides on this
// instance's own count; only an instance too busy to run the handshake
// waits that long, so the refusal is the one an instance gives when it
// is busy, whoever asks. Config.FailClosed does not apply: a wait says
// nothing about Redis (see the Limiter's judgement of timeouts), and
// letting the session through without a slot would leave it uncounted
// by every cap. A lease the script may still have taken in Redis is
// never renewed and expires within the lease TTL. The client key is the one the handshake
// limiter in front used (clientip.KeyFrom), else the key of
// clientip.FromRequest with TrustedProxies and IPv6Prefix.
func Middleware(cfg MiddlewareConfig, next http.Handler) (http.Handler, error) {
	if cfg.Limiter == nil {
		return nil, configErrorf("MiddlewareConfig.Limiter is nil")
	}
	if next == nil {
		return nil, configErrorf("Middleware: next handler is nil")
	}
	if cfg.Zone == "" {
		return nil, configErrorf("MiddlewareConfig.Zone is empty")
	}
	if cfg.Max < 1 {
		return nil, configErrorf("MiddlewareConfig.Max %d is below 1", cfg.Max)
	}
	if cfg.RetryAfter < 0 {
		return nil, configErrorf("MiddlewareConfig.RetryAfter %v is negative", cfg.RetryAfter)
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.AcquireTimeout < 0 {
		return nil, configErrorf("MiddlewareConfig.AcquireTimeout %v is negative", cfg.AcquireTimeout)
	}
	if cfg.AcquireTimeout == 0 {
		cfg.AcquireTimeout = DefaultAcquireTimeout
	}
	if cfg.IPv6Prefix == 0 {
		cfg.IPv6Prefix = clientip.DefaultIPv6Prefix
	}
	if !clientip.ValidIPv6Prefix(cfg.IPv6Prefix) {
		return nil, configErrorf("MiddlewareConfig.IPv6Prefix %d is not between 1 and 128", cfg.IPv6Prefix)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &middleware{cfg: cfg, next: next}, nil
}

type middleware struct {
	cfg  MiddlewareConfig
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := clientip.KeyFrom(r.Context())
	if !ok {
		key = clientip.Key(clientip.FromRequest(r, m.cfg.TrustedProxies), m.cfg.IPv6Prefix)
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.AcquireTimeout)
	lease, d, err := m.cfg.Limiter.Acquire(ctx, ScopeIP, m.cfg.Zone+":"+key, m.cfg.Max)
	cancel()
	if err != nil {
		if r.Context().Err() != nil {
			return // the client is gone; nobody reads an answer
		}
		// Acquire fails only for a bad key or max (impossible here: Max
		// was checked, and a key is never empty) or when ctx ended: the
		// decision took longer than AcquireTimeout.
		d = Decision{Store: StoreNone, TimedOut: true}
		m.cfg.Limiter.observer.Decision(ScopeIP, d)
		secs := retryafter.Header(retryafter.Jittered(m.cfg.RetryAfter, m.cfg.Rand))
		w.Header().Set("Retry-After", secs)
		http.Error(w, "server busy (session cap undecided), retry after "+secs+"s", http.StatusServiceUnavailable)
		return
	}
	if !d.Allowed {
		if m.cfg.PrefixRefused != nil && d.Store != StoreNone && clientip.IsPrefixKey(key) {
			m.cfg.PrefixRefused()
		}
		secs := retryafter.Header(retryafter.Jittered(m.cfg.RetryAfter, m.cfg.Rand))
		w.Header().Set("Retry-After", secs)
		msg := "too many open sessions from this address, retry after " + secs + "s"
		if d.Store == StoreNone {
			msg = "session cap unavailable, retry after " + secs + "s"
		}
		http.Error(w, msg, http.StatusTooManyRequests)
		return
	}
	lim := m.cfg.Limiter
	r = r.WithContext(server.OnSessionEnd(r.Context(), func() { lim.Release(lease) }))
	m.next.ServeHTTP(w, r)
}
