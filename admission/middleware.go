package admission

import (
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
	// Now is the clock of the decisions. Nil means time.Now.
	Now func() time.Time
}

// Middleware returns a handler that asks cfg.Gate before each request
// reaches next, which must be a *server.Server or pass the request's
// context on to one: the slot is given back through server.OnSessionEnd
// when the session ends, or before next returns when the request never
// became a session, exactly once either way.
//
// A refused request gets, before any WebSocket work:
//
//	HTTP/1.1 503 Service Unavailable
//	Retry-After: <whole seconds, see the package comment>
//	Cache-Control: no-store
//
//	server busy (<reason>), retry after <seconds>s
//
// 503, not 429: the instance is busy, whoever the client is. A request
// that is not a WebSocket upgrade (a page probing the path with a plain
// GET) is refused the same way when the instance is busy, but when it
// is not, it takes neither a token nor a slot: only handshakes spend
// what handshakes need. Sessions already open are never touched.
//
// Put it innermost, right in front of the server, behind the per-client
// limits, so that a client refused for its own excess never spends the
// instance's tokens.
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
	return &middleware{cfg: cfg, next: next}, nil
}

type middleware struct {
	cfg  MiddlewareConfig
	next http.Handler
}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := m.cfg.Gate
	upgrade := isUpgrade(r)
	var d Decision
	if upgrade {
		d = g.AdmitAt(m.cfg.Now())
	} else {
		d = g.CheckAt(m.cfg.Now())
	}
	if !d.Admitted {
		if m.cfg.Observer != nil {
			m.cfg.Observer.Refused(d.Reason)
		}
		secs := retryafter.Header(retryafter.Seconds(d.RetryAfter))
		h := w.Header()
		h.Set("Retry-After", secs)
		h.Set("Cache-Control", "no-store")
		http.Error(w, "server busy ("+d.Reason+"), retry after "+secs+"s", http.StatusServiceUnavailable)
		return
	}
	if !upgrade {
		m.next.ServeHTTP(w, r)
		return
	}
	if m.cfg.Observer != nil {
		m.cfg.Observer.Admitted()
	}
	var released atomic.Bool
	release := func() {
		if released.CompareAndSwap(false, true) {
			g.Release()
		}
	}
	// A panic below never reaches the server's own release: give the
	// slot back before net/http recovers it.
	defer func() {
		if p := recover(); p != nil {
			release()
			panic(p)
		}
	}()
	r = r.WithContext(server.OnSessionEnd(r.Context(), release))
	m.next.ServeHTTP(w, r)
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
