package server

import (
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// originLogInterval is how often a cross-origin refusal may be logged.
// A browser whose page is refused retries on its own schedule, so one
// misconfigured proxy (a Host without its port) or a missing
// Config.OriginPatterns entry refuses every browser in the same way, many
// times a second: one line a minute says so, with the count between.
const originLogInterval = time.Minute

// originLog writes the handshakes refused as cross-origin at warn level,
// the first at once and then at most one line per originLogInterval,
// each with the refusals since the last line. A refused browser sees only
// a failed WebSocket (its page cannot read the 403), so the log is where
// an operator finds out. The zero value is ready; it is safe for
// concurrent use.
type originLog struct {
	// mu guards last and suppressed.
	mu         sync.Mutex
	last       time.Time // when the last line was written; zero: never
	suppressed int       // refusals since then, not logged
}

// refused counts one refusal of r at now and logs it unless a line was
// written within originLogInterval.
func (l *originLog) refused(logger *slog.Logger, r *http.Request, now time.Time) {
	l.mu.Lock()
	if !l.last.IsZero() && now.Sub(l.last) < originLogInterval {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	since := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	logger.Warn("websocket handshake refused: cross-origin",
		"origin", r.Header.Get("Origin"),
		"host", r.Host,
		"remote", r.RemoteAddr,
		"refused_since_last_line", since,
		"hint", "behind a proxy, pass the Host the browser used, port included (nginx: proxy_set_header Host $http_host); for other origins set OriginPatterns (-allowed-origins)")
}
