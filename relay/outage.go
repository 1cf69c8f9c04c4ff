package relay

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// pathPublish is the outage path of the publisher; subscription
// connections are paths of their own (see subscribe.go).
const pathPublish = "publish"

// outage tracks whether Redis is reachable, so that an outage is logged
// once when it starts (Warn) and once when it ends (Info), however many
// operations fail in between.
//
// The relay reaches Redis along several paths: the publisher's pipelines
// and each subscription connection. They do not come back at the same
// instant: go-redis backs off dialling per connection pool, so after a
// restart one path may succeed while another still fails for a moment.
// Ending the outage on the first success and starting a new one on the
// next failure would log a second outage for the same event. So when an
// outage starts, every known path becomes suspect, and the outage ends
// only once each of them has succeeded again; a failure in between only
// makes its path suspect again.
//
// An outage is safe for concurrent use.
type outage struct {
	logger *slog.Logger
	obs    Observer
	// active mirrors down for the lock-free check on every success.
	active atomic.Bool

	// mu guards the fields below.
	mu    sync.Mutex
	down  bool
	since time.Time
	// paths are the known paths; suspect those that have not succeeded
	// since the outage began (empty while up).
	paths   map[string]struct{}
	suspect map[string]struct{}
}

func (o *outage) init(logger *slog.Logger, obs Observer) {
	o.logger, o.obs = logger, obs
	o.paths = map[string]struct{}{pathPublish: {}}
	o.suspect = map[string]struct{}{}
}

// add makes path known: from now on an outage waits for it to succeed.
func (o *outage) add(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths[path] = struct{}{}
	if o.down {
		o.suspect[path] = struct{}{}
	}
}

// remove forgets path (its connection is gone for good); if it was the
// last suspect one, the outage ends.
func (o *outage) remove(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.paths, path)
	delete(o.suspect, path)
	o.endIfClearLocked()
}

// failed records a failed Redis operation op on path; the first one of an
// outage is logged.
func (o *outage) failed(path, op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		o.suspect[path] = struct{}{}
		return
	}
	o.down, o.since = true, time.Now()
	for p := range o.paths {
		o.suspect[p] = struct{}{}
	}
	o.suspect[path] = struct{}{}
	o.active.Store(true)
	// Log before telling the observer: whoever sees the outage in the
	// metrics finds its line in the log.
	o.logger.Warn("relay: Redis unreachable, messages to and from other instances are dropped until it is back",
		"op", op, "err", err)
	o.obs.RelayOutage(true)
}

// ok records a successful Redis operation on path; the outage ends, and
// is logged, when every path has succeeded since it began.
func (o *outage) ok(path string) {
	if !o.active.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	delete(o.suspect, path)
	o.endIfClearLocked()
}

// suspected reports whether path has yet to succeed in the current
// outage.
func (o *outage) suspected(path string) bool {
	if !o.active.Load() {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, s := o.suspect[path]
	return s
}

func (o *outage) endIfClearLocked() {
	if !o.down || len(o.suspect) > 0 {
		return
	}
	o.down = false
	o.active.Store(false)
	o.logger.Info("relay: Redis reachable again, relaying resumed",
		"outage", time.Since(o.since).Round(time.Millisecond))
	o.obs.RelayOutage(false)
}
