package admission

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/internal/retryafter"
	"github.com/stompgate/stompgate/server"
)

// Observer is told of each decision the Middleware makes. Its methods
// must not block.
type Observer interface {
	// Admitted counts a WebSocket upgrade let through to the server.
	Admitted()
	// Refused counts a refusal by its reason (outcome.Admission*).
	Refused(reason string)
}

// MiddlewareConfig configures Middleware. Gate is required.
type MiddlewareConfig struct {
	// Gate decides.
	Gate *Gate
	// Observer, if not nil, is told of each decision.
	Observer Observer
	// Now is the clock of the decisions, read with the Gate's lock held.
	// Nil means time.Now.
	Now func() time.Time
	// Checks, if not nil, wraps the per-client checks (the handshake
	// limit, the session cap) around the handler it is given, which
	// leads to next: they then run between a look at the Gate and the
	// taking of its token and slot. The look refuses what a busy
	// instance would refuse, so that such a refusal costs none of the
	// checks' work (each may be a Redis round trip); the token and slot
	// are taken only once the checks let the request through, so a
	// client refused for its own excess never holds the instance's
	// tokens, not even while its refusal is being decided (a flood from
	// one address would otherwise keep the bucket empty for everyone
	// else). Nil: next is called right after the decision.
	Checks func(http.Handler) (http.Handler, error)
}

// Middleware returns a handler that asks cfg.Gate before each request
// reaches next, which must be a *server.Server or pass the request's
// context on to one: the slot is given back through server.OnSessionEnd
// when the session ends, or before next returns when the request never
// became a session, exactly once either way. With cfg.Checks, the
// per-client checks run between the decision and next.
//
// A refused request gets, before any WebSocket work and before the
// checks:
//
//	HTTP/1.1 503 Service Unavailable
//	Retry-After: <whole seconds, see the package comment>
//	Cache-Control: no-store
//	Connection: close
//
//	server busy (<reason>), retry after <seconds>s
//
// 503, not 429: the instance is busy, whoever the client is; the
// connection is closed after it, so a refused client holds nothing of
// the instance until it comes back. A request
// that is not a WebSocket upgrade (a page probing the path with a plain
// GET) is refused the same way when the instance is busy, but when it
// is not, it takes neither a token nor a slot: only handshakes spend
// what handshakes need. Sessions already open are never touched.
//
// Put it outermost with the per-client limits as cfg.Checks, or
// innermost right in front of the server, behind them: either way a
// client refused for its own excess never keeps the instance's tokens.
func Middleware(cfg MiddlewareConfig, next http.Handler) (http.Handler, error) {
	if cfg.Gate == nil {
		return nil, configErrorf("MiddlewareConfig.Gate is nil")
	}
	if next == nil {
		return nil, configErrorf("Middleware: next handler is nil")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &middleware{cfg: cfg}
	var inner http.Handler = &handoff{m: m, next: next}
	if cfg.Checks != nil {
		var err error
		if inner, err = cfg.Checks(inner); err != nil {
			return nil, err
		}
		if inner == nil {
			return nil, configErrorf("MiddlewareConfig.Checks returned no handler")
		}
	}
	m.inner = inner
	return m, nil
}

type middleware struct {
	cfg   MiddlewareConfig
	inner http.Handler // the checks, then handoff, then next
}

// ticketKey is the context key of an admitted upgrade's ticket.
type ticketKey struct{}

// ticket is an admitted upgrade on its way to the server: handed is set
// by handoff when it got there (before the middleware reads it, on the
// same request's call chain), released once the slot is given back.
type ticket struct {
	handed   bool
	released atomic.Bool
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := m.cfg.Gate
	// A look only: the token and slot of an upgrade are taken by
	// handoff, after the checks (see MiddlewareConfig.Checks).
	if d := g.admitWith(m.cfg.Now, false); !d.Admitted {
		m.refuse(w, d)
		return
	}
	if !isUpgrade(r) {
		// Only an upgrade takes a token and a slot (see Middleware).
		m.inner.ServeHTTP(w, r)
		return
	}
	t := &ticket{}
	// A panic below never reaches the server's own release: give the
	// slot back before net/http recovers it.
	defer func() {
		if p := recover(); p != nil {
			if t.handed && t.released.CompareAndSwap(false, true) {
				g.Release()
			}
			panic(p)
		}
	}()
	m.inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)))
}

// refuse answers a request the Gate refused.
func (m *middleware) refuse(w http.ResponseWriter, d Decision) {
	if m.cfg.Observer != nil {
		m.cfg.Observer.Refused(d.Reason)
	}
	secs := retryafter.Header(retryafter.Seconds(d.RetryAfter))
	h := w.Header()
	h.Set("Retry-After", secs)
	h.Set("Cache-Control", "no-store")
	// The client comes back in a second or more: a connection kept
	// alive for it meanwhile would hold a goroutine, buffers and a file
	// descriptor per refused client, in a storm as many as the sessions
	// the instance is refusing room for.
	h.Set("Connection", "close")
	http.Error(w, "server busy ("+d.Reason+"), retry after "+secs+"s", http.StatusServiceUnavailable)
}

// handoff is the last handler before the server: an upgrade that
// reaches it takes its token and slot from the Gate, or is refused there
// if others took them since the first look (the checks in between may
// have waited on Redis); one admitted is a session's (counted as
// admitted), and its slot is given back through server.OnSessionEnd.
type handoff struct {
	m    *middleware
	next http.Handler
}

func (h *handoff) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, _ := r.Context().Value(ticketKey{}).(*ticket)
	if t == nil {
		// Not an upgrade: the decision took nothing.
		h.next.ServeHTTP(w, r)
		return
	}
	g := h.m.cfg.Gate
	if d := g.admitWith(h.m.cfg.Now, true); !d.Admitted {
		h.m.refuse(w, d)
		return
	}
	t.handed = true
	if h.m.cfg.Observer != nil {
		h.m.cfg.Observer.Admitted()
	}
	release := func() {
		if t.released.CompareAndSwap(false, true) {
			g.Release()
		}
	}
	h.next.ServeHTTP(w, r.WithContext(server.OnSessionEnd(r.Context(), release)))
}

// isUpgrade reports whether r asks for a WebSocket upgrade (RFC 6455
// section 4.1: Upgrade: websocket, Connection: Upgrade). Whether it is
// a valid one is the server's to judge; this only tells a handshake from
// a page's probe.
func isUpgrade(r *http.Request) bool {
	if !strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}
