package handshake

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/internal/retryafter"
)

// MiddlewareConfig configures Middleware. Limiter and Limit are required.
type MiddlewareConfig struct {
	// Limiter makes the decisions.
	Limiter *Limiter
	// Limit is the handshake zone, e.g. {Name: "ws_handshake", Rate: 3000,
	// Burst: 5}. Its Name names the policy in the RateLimit headers.
	Limit Limit
	// TrustedProxies are the peers whose X-Real-IP and X-Forwarded-For
	// headers are believed (see clientip.FromRequest). Nil trusts none.
	TrustedProxies []netip.Prefix
	// IPv6Prefix is the prefix length, in bits, by which IPv6 clients are
	// keyed (see clientip.Key): every address of one prefix shares one
	// bucket and one ban. Zero means clientip.DefaultIPv6Prefix (/64); 128 keys
	// each address by itself; outside 0..128 is an error. IPv4 clients
	// are keyed by address whatever it says.
	IPv6Prefix int
	// PrefixRefused, if not nil, is called for each refusal of a client
	// keyed by an IPv6 prefix rather than its address, so that a metric
	// can show what the prefix keying holds back. It must not block.
	PrefixRefused func()
	// Logger receives limiter failures and, at most every 10 s, a
	// summary of the refusals (how many, from how many addresses, the
	// busiest five); each refusal is counted by the Limiter's Observer.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Rand returns uniform values in [0, 1) for the jitter of
	// Retry-After. Nil means math/rand/v2's Float64; tests and examples
	// fix it.
	Rand func() float64
}

// Middleware returns a handler that rate-limits requests per client (an
// IPv4 address or an IPv6 prefix, see clientip.Key) before calling next, which is meant to be the WebSocket upgrade.
//
// A request over the limit gets 429 Too Many Requests with a short text
// body, before any WebSocket work, and the headers
//
//	Retry-After: <seconds: the bucket's true time rounded up, plus jitter>
//	RateLimit-Policy: "<Limit.Name>";q=<Burst+1>;w=<window seconds>
//	RateLimit: "<Limit.Name>";r=0;t=<seconds, as Retry-After>
//
// Retry-After is never below the time the bucket (or a ban) needs to let
// the client through, rounded up to whole seconds, and is drawn uniformly
// from a window above it (half of it, at least 1 s, at most 10 s; see
// internal/retryafter), so that the clients refused in one instant come
// back spread out rather than together.
//
// in the structured-field form of draft-ietf-httpapi-ratelimit-headers
// (revisions 08 to 11: a List of quota policies named by a String, with
// parameters q, the quota, and w, the window, and an Item with r, the
// remaining quota, and t, the seconds until it resets; earlier revisions'
// RateLimit-Limit/-Remaining/-Reset fields are not sent). A leaky bucket
// has no window: q is the burst that passes from rest and w the seconds
// the bucket takes to drain it, rounded up. An allowed request reaches
// next with the client address and its key in its context (clientip.AddrFrom,
// clientip.KeyFrom).
func Middleware(cfg MiddlewareConfig, next http.Handler) (http.Handler, error) {
	if cfg.Limiter == nil {
		return nil, configErrorf("MiddlewareConfig.Limiter is nil")
	}
	if next == nil {
		return nil, configErrorf("Middleware: next handler is nil")
	}
	if err := cfg.Limit.Validate(); err != nil {
		return nil, err
	}
	prefix := cfg.IPv6Prefix
	if prefix == 0 {
		prefix = clientip.DefaultIPv6Prefix
	} else if !clientip.ValidIPv6Prefix(prefix) {
		return nil, configErrorf("MiddlewareConfig.IPv6Prefix %d is not between 1 and 128", prefix)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	name := `"` + cfg.Limit.Name + `"` // Validate excludes '"' and '\'.
	return &middleware{
		limiter:  cfg.Limiter,
		limit:    cfg.Limit,
		trusted:  cfg.TrustedProxies,
		prefix:   prefix,
		onPrefix: cfg.PrefixRefused,
		logger:   cfg.Logger,
		next:     next,
		name:     name,
		policy:   name + ";q=" + strconv.Itoa(cfg.Limit.Burst+1) + ";w=" + strconv.FormatInt(windowSeconds(cfg.Limit), 10),
		refusals: &refusalLog{logger: cfg.Logger, now: time.Now},
		rnd:      cfg.Rand,
	}, nil
}

type middleware struct {
	limiter *Limiter
	limit   Limit
	trusted []netip.Prefix
	// prefix is the IPv6 prefix length of the keys; onPrefix the
	// PrefixRefused hook, nil when not wanted.
	prefix   int
	onPrefix func()
	logger   *slog.Logger
	next     http.Handler
	// name is Limit.Name as a structured-field String.
	name string
	// policy is the RateLimit-Policy value, computed once.
	policy string
	// refusals writes rate-limited summaries of the 429s.
	refusals *refusalLog
	// rnd draws the jitter of Retry-After; nil: math/rand/v2.
	rnd func() float64
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ip := clientip.FromRequest(r, m.trusted)
	key := clientip.Key(ip, m.prefix)
	res, err := m.limiter.Allow(r.Context(), key, m.limit)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client is gone; nobody reads an answer
		}
		m.logger.Error("handshake: limiter failed", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if !res.Allowed {
		m.refusals.refused(key)
		if m.onPrefix != nil && clientip.IsPrefixKey(key) {
			m.onPrefix()
		}
		m.refuse(w, res)
		return
	}
	if ip.IsValid() {
		r = r.WithContext(clientip.WithKey(clientip.WithAddr(r.Context(), ip), key))
	}
	m.next.ServeHTTP(w, r)
}

func (m *middleware) refuse(w http.ResponseWriter, res Result) {
	secs := retryafter.Header(retryafter.Jittered(res.RetryAfter, m.rnd))
	h := w.Header()
	h.Set("Retry-After", secs)
	h.Set("RateLimit-Policy", m.policy)
	h.Set("RateLimit", m.name+";r=0;t="+secs)
	http.Error(w, "too many requests, retry after "+secs+"s", http.StatusTooManyRequests)
}

// windowSeconds is the time an empty bucket takes to drain Burst+1
// requests, (Burst+1)×1000/Rate seconds, rounded up, at least 1.
func windowSeconds(l Limit) int64 {
	n := (int64(l.Burst) + 1) * 1000
	return max((n+l.Rate-1)/l.Rate, 1)
}
