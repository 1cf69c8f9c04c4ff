package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// PresencePrefix starts a presence destination: a SUBSCRIBE to
// PresencePrefix + "/topic/room.42" watches the members of /topic/room.42
// (see PresenceConfig).
const PresencePrefix = "/presence"

// PresenceInfoHeader is the SUBSCRIBE header whose value becomes the
// session's client info in a presence destination's member list.
const PresenceInfoHeader = "presence-info"

// ErrPresenceNotEnabled is what a Presence's Watch returns for a
// destination that keeps no presence; the SUBSCRIBE is refused with an
// ERROR saying so.
var ErrPresenceNotEnabled = errors.New("server: presence not enabled for this destination")

// Presence keeps who is subscribed to which destinations, by principal
// (package presence's Tracker is one). Its methods are called on session
// readers and must be safe for concurrent use.
type Presence interface {
	// Join adds a session of principal, subscribed to dest with info, to
	// dest's members; ok false (and leave nil) when dest keeps no
	// presence. leave is called once, when the subscription ends.
	Join(dest, principal, info string) (leave func(), ok bool)
	// Watch starts a watch of dest's members: send gets the JSON bodies
	// of the presence frames, the first one before Watch returns. stop
	// is called once, when the watch ends. An error refuses the watch;
	// one that is ErrPresenceNotEnabled (errors.Is) says dest keeps none.
	Watch(dest string, send func(body []byte) bool) (stop func(), err error)
}

// PresenceConfig plugs presence into a Server. The zero value keeps none.
type PresenceConfig struct {
	// Presence keeps the members; nil keeps none and refuses every
	// presence SUBSCRIBE.
	Presence Presence
	// MaxWatches is the most presence destinations one session may watch
	// at once; the next SUBSCRIBE is refused with ERROR and a close. 0 or
	// negative: DefaultMaxPresenceWatches.
	MaxWatches int
	// MaxInfoBytes is the most bytes of the presence-info header; a
	// longer one, or one that is not UTF-8, refuses the SUBSCRIBE with
	// ERROR and a close. 0 or negative: DefaultMaxPresenceInfo.
	MaxInfoBytes int
	// Refused, if not nil, counts a refused presence SUBSCRIBE by reason
	// (outcome.PresenceRefusals).
	Refused func(reason string)
}

// Presence defaults.
const (
	// DefaultMaxPresenceWatches: a page shows the members of the room it
	// is in, and perhaps a lobby; 8 leaves room for tabs within tabs
	// while a session cannot make the server fan out a room's churn to
	// it many times over.
	DefaultMaxPresenceWatches = 8
	// DefaultMaxPresenceInfo: room for a display name, an avatar id and
	// a status; a member list of 1,000 stays near 300 KB at most.
	DefaultMaxPresenceInfo = 256
)

// sessionPresence is a session's presence state, owned by its reader.
type sessionPresence struct {
	leaves  map[string]func() // by subscription id: what ends its membership
	watches map[string]func() // by subscription id: what stops its watch
}

// presenceCfg returns the config with its defaults applied.
func (s *Server) presenceCfg() PresenceConfig {
	c := s.cfg.Presence
	if c.MaxWatches <= 0 {
		c.MaxWatches = DefaultMaxPresenceWatches
	}
	if c.MaxInfoBytes <= 0 {
		c.MaxInfoBytes = DefaultMaxPresenceInfo
	}
	return c
}

// presenceRefused counts and answers a refused presence SUBSCRIBE.
func (s *session) presenceRefused(reason, message, detail, receipt string) bool {
	if f := s.srv.cfg.Presence.Refused; f != nil {
		f(reason)
	}
	s.protocolError(malformed(message, detail), receipt)
	return true
}

// principalKey is who the session is a member as: its principal's name,
// or, for an anonymous session, a name of its own that does not give
// away its session id (which the server API acts on) to the room.
func (s *session) principalKey() string {
	if p := s.st.Principal; p != nil && p.Name != "" && !p.Anonymous {
		return p.Name
	}
	sum := sha256.Sum256([]byte(s.st.ID))
	return "anonymous-" + hex.EncodeToString(sum[:8])
}

// joinPresence makes the session a member of sub's destination when it
// keeps presence, with the presence-info header of f, and reports
// whether the session is ending (bad info).
func (s *session) joinPresence(f *stompframe.Frame, sub *broker.Subscription, receipt string) (end bool) {
	c := s.srv.presenceCfg()
	if c.Presence == nil || strings.HasPrefix(sub.Destination, UserPrefix) {
		return false
	}
	info := f.Get(PresenceInfoHeader)
	if len(info) > c.MaxInfoBytes || !utf8.ValidString(info) {
		return s.presenceRefused(outcome.PresenceInfoInvalid, "invalid presence info",
			fmt.Sprintf("the %s header holds at most %d bytes of UTF-8", PresenceInfoHeader, c.MaxInfoBytes), receipt)
	}
	leave, ok := c.Presence.Join(sub.Destination, s.principalKey(), info)
	if !ok {
		return false
	}
	if s.presence == nil {
		s.presence = &sessionPresence{}
	}
	if s.presence.leaves == nil {
		s.presence.leaves = make(map[string]func())
	}
	s.presence.leaves[sub.ID] = leave
	return false
}

// leavePresence ends the membership subscription id made, if any.
func (s *session) leavePresence(id string) {
	if s.presence == nil {
		return
	}
	if leave := s.presence.leaves[id]; leave != nil {
		delete(s.presence.leaves, id)
		leave()
	}
}

// watchPresence serves a SUBSCRIBE to a presence destination, id its
// subscription id, and reports whether the session is ending.
func (s *session) watchPresence(f *stompframe.Frame, id, receipt string) (end bool) {
	c := s.srv.presenceCfg()
	dest := f.Get("destination")
	room := strings.TrimPrefix(dest, PresencePrefix)
	if _, dup := s.subs[id]; dup || (s.presence != nil && s.presence.watches[id] != nil) {
		s.protocolError(malformed("duplicate subscription", fmt.Sprintf("subscription id %q is already in use", id)), receipt)
		return true
	}
	if c.Presence == nil || !strings.HasPrefix(room, "/") {
		return s.presenceRefused(outcome.PresenceNotEnabled, "presence not enabled",
			fmt.Sprintf("%q keeps no presence", room), receipt)
	}
	if s.presence != nil && len(s.presence.watches) >= c.MaxWatches {
		return s.presenceRefused(outcome.PresenceWatchLimit, "too many presence subscriptions",
			fmt.Sprintf("at most %d presence subscriptions per session", c.MaxWatches), receipt)
	}
	sub := broker.NewSubscription(id, dest, broker.AckAuto, s.version, s)
	send := func(body []byte) bool {
		m := broker.NewMessageParts(s.srv.cfg.Broker.NextID(), dest,
			[]stompframe.Header{{Name: "content-type", Value: "application/json"}}, body)
		return s.Deliver(sub, m, nil)
	}
	stop, err := c.Presence.Watch(room, send)
	if err != nil {
		if errors.Is(err, ErrPresenceNotEnabled) {
			return s.presenceRefused(outcome.PresenceNotEnabled, "presence not enabled",
				fmt.Sprintf("%q keeps no presence", room), receipt)
		}
		return s.presenceRefused(outcome.PresenceStoreError, "presence unavailable",
			"the member list could not be read; try again later", receipt)
	}
	if s.presence == nil {
		s.presence = &sessionPresence{}
	}
	if s.presence.watches == nil {
		s.presence.watches = make(map[string]func())
	}
	s.presence.watches[id] = stop
	return false
}

// unwatchPresence stops the watch subscription id made and reports
// whether there was one.
func (s *session) unwatchPresence(id string) bool {
	if s.presence == nil {
		return false
	}
	stop := s.presence.watches[id]
	if stop == nil {
		return false
	}
	delete(s.presence.watches, id)
	stop()
	return true
}

// endPresence stops the session's watches at its end; its memberships
// end with its subscriptions.
func (s *session) endPresence() {
	if s.presence == nil {
		return
	}
	for id, stop := range s.presence.watches {
		delete(s.presence.watches, id)
		stop()
	}
}
