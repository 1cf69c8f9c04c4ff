package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/presence"
	"github.com/stompgate/stompgate/presence/redisstore"
	"github.com/stompgate/stompgate/server"
)

// Presence: the members of destinations whose policy rule says
// presence: true, shared by every instance on -redis-url, served at
// /presence/<destination> and by the server API.

// Presence defaults, beside the server's (watches, info bytes) and the
// tracker's (members per frame).
const (
	// defaultPresenceGrace: a page reload or a network switch reconnects
	// within a few seconds; a member away longer has left.
	defaultPresenceGrace = 5 * time.Second
	// defaultPresenceBatch: a quarter second is below what a member list
	// on screen needs, and gathers a room's mass reconnect into a few
	// frames per watcher.
	defaultPresenceBatch = 250 * time.Millisecond
)

// presenceSettings are the presence bounds.
type presenceSettings struct {
	presenceGrace      time.Duration
	presenceBatch      time.Duration
	presenceMaxMembers int
	presenceMaxWatches int
	presenceMaxInfo    int
	presenceTimeout    time.Duration
}

// presenceFlags registers the presence settings.
func (s *settings) presenceFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.presenceGrace, "presence-grace", defaultPresenceGrace, "how long a member whose last session ended stays in a presence destination, so that a reconnect within it is neither a leave nor a join (0: leaves at once)")
	fs.DurationVar(&s.presenceBatch, "presence-batch", defaultPresenceBatch, "how long the joins and leaves of a presence destination are gathered into one frame per watcher (0: a frame per change)")
	fs.IntVar(&s.presenceMaxMembers, "presence-max-members", presence.DefaultMaxMembers, "most members a presence snapshot lists (its count counts all) and most joins and leaves one delta frame carries")
	fs.IntVar(&s.presenceMaxWatches, "presence-max-watches", server.DefaultMaxPresenceWatches, "most /presence destinations one session may watch at once; the next SUBSCRIBE is refused with ERROR and a close")
	fs.DurationVar(&s.presenceTimeout, "presence-timeout", presence.DefaultTimeout, "bound on each presence call to Redis: a member's write, a room's snapshot (which a presence SUBSCRIBE waits for), a lease renewal")
	fs.IntVar(&s.presenceMaxInfo, "presence-max-info", server.DefaultMaxPresenceInfo, "most bytes of a SUBSCRIBE's presence-info header (UTF-8); a longer one is refused with ERROR and a close")
}

// validatePresence checks the settings presenceFlags registers.
func (s *settings) validatePresence() error {
	switch {
	case s.presenceGrace < 0:
		return badSetting("presence-grace", s.presenceGrace, "must not be negative (0: no grace)")
	case s.presenceBatch < 0:
		return badSetting("presence-batch", s.presenceBatch, "must not be negative (0: no batching)")
	case s.presenceMaxMembers < 1:
		return badSetting("presence-max-members", s.presenceMaxMembers, "must be at least 1")
	case s.presenceMaxWatches < 1:
		return badSetting("presence-max-watches", s.presenceMaxWatches, "must be at least 1")
	case s.presenceMaxInfo < 1:
		return badSetting("presence-max-info", s.presenceMaxInfo, "must be at least 1")
	case s.presenceTimeout <= 0:
		return badSetting("presence-timeout", s.presenceTimeout, "must be positive")
	}
	return nil
}

// presenceParts are what newPresence builds, closed by closePresence.
type presenceParts struct {
	tracker *presence.Tracker
	store   *redisstore.Store // nil without -redis-url
}

// newPresence builds the presence tracker (in Redis with -redis-url, in
// process memory otherwise), sets a.presence and returns what the server
// needs of it.
func (a *app) newPresence(st *settings, logger *slog.Logger) (server.PresenceConfig, error) {
	p := &presenceParts{}
	var store presence.Store
	if a.redis != nil {
		rs, err := redisstore.New(redisstore.Config{
			Client:     a.redis,
			LeaseTTL:   st.sessionLeaseTTL,
			Timeout:    st.presenceTimeout,
			Dropped:    a.metrics.PresenceDropped,
			StoreError: a.metrics.PresenceStoreError,
			Logger:     logger,
		})
		if err != nil {
			return server.PresenceConfig{}, fmt.Errorf("-session-lease-ttl: %w", err)
		}
		p.store, store = rs, rs
	}
	p.tracker = presence.New(presence.Config{
		Store:      store,
		Enabled:    a.rules.Presence,
		Grace:      st.presenceGrace,
		Batch:      st.presenceBatch,
		MaxMembers: st.presenceMaxMembers,
		Timeout:    st.presenceTimeout,
		Observer:   presenceObserver{observer{a.metrics}},
		Logger:     logger,
	})
	a.presence = p
	return server.PresenceConfig{
		Presence:     serverPresence{p.tracker},
		MaxWatches:   st.presenceMaxWatches,
		MaxInfoBytes: st.presenceMaxInfo,
		Refused:      a.metrics.PresenceRefused,
	}, nil
}

// closePresence stops the tracker, then its store.
func (a *app) closePresence() {
	if a.presence == nil {
		return
	}
	a.presence.tracker.Close()
	if a.presence.store != nil {
		_ = a.presence.store.Close()
	}
}

// Presence reports whether the destination rule in force keeps dest's
// members.
func (r *ruleSet) Presence(dest string) bool { return r.current.Load().Presence(dest) }

// serverPresence is the tracker as the server sees it.
type serverPresence struct{ t *presence.Tracker }

func (p serverPresence) Join(dest, principal, info string) (func(), bool) {
	return p.t.Join(dest, principal, info)
}

func (p serverPresence) Watch(dest string, send func([]byte) bool) (func(), error) {
	stop, err := p.t.Watch(dest, send)
	if errors.Is(err, presence.ErrNotEnabled) {
		err = server.ErrPresenceNotEnabled
	}
	return stop, err
}

// presenceObserver counts what the tracker does.
type presenceObserver struct{ observer }

func (o presenceObserver) Event(op presence.Op) { o.m.PresenceEvent(string(op)) }
func (o presenceObserver) Frame(kind string)    { o.m.PresenceFrame(kind) }
func (o presenceObserver) Truncated()           { o.m.PresenceTruncated() }
func (o presenceObserver) StoreError()          { o.m.PresenceStoreError() }

// demoRoom is a room of the demo page, which names its rooms
// /topic/room.<name>.
const demoRoom = "/topic/room.lobby"

// demoPresence tells the demo page whether the rule in force at start
// keeps the presence of its rooms.
func (a *app) demoPresence() bool { return a.rules.Presence(demoRoom) }
