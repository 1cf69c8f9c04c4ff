package relay

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outage tracks whether Redis is reachable, so that an outage is logged
// once when it starts (Warn) and once when it ends (Info), however many
// messages fail in between.
type outage struct {
	logger *slog.Logger
	obs    Observer
	// active mirrors down for the lock-free check on every success.
	active atomic.Bool

	// mu guards down and since.
	mu    sync.Mutex
	down  bool
	since time.Time
}

func (o *outage) init(logger *slog.Logger, obs Observer) {
	o.logger, o.obs = logger, obs
}

// failed records a failed Redis operation; the first one of an outage is
// logged.
func (o *outage) failed(op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return
	}
	o.down, o.since = true, time.Now()
	o.active.Store(true)
	o.obs.RelayOutage(true)
	o.logger.Warn("relay: Redis unreachable, messages to and from other instances are dropped until it is back",
		"op", op, "err", err)
}

// ok records a successful Redis operation; the first one after an outage
// is logged.
func (o *outage) ok() {
	if !o.active.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	o.down = false
	o.active.Store(false)
	o.obs.RelayOutage(false)
	o.logger.Info("relay: Redis reachable again, relaying resumed",
		"outage", time.Since(o.since).Round(time.Millisecond))
}
