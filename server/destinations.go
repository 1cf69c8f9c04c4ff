package server

import (
	"context"
	"fmt"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/outcome"
)

// DestinationOptions are the per-destination settings a policy's rules
// give. The zero value is a destination as every destination was before
// rules: delivery in order, with no cap on its subscribers.
type DestinationOptions struct {
	// Rule is the matching rule's name, for metric labels; "" when none.
	// It must come from a bounded set (the policy's rule names), never
	// from the destination itself.
	Rule string
	// Latest selects latest-value delivery: a subscriber holds at most
	// one pending MESSAGE of the subscription, a newer one replacing it
	// before it is written (see Config.Destinations).
	Latest bool
	// MaxSubscribers is the most subscriptions the destination may have
	// on this server, or on every instance together with
	// Config.SubscriberSlots; the next SUBSCRIBE is refused with ERROR
	// "subscriber limit reached" and a close. 0 or negative: no cap.
	MaxSubscribers int
	// History, if not nil, keeps a history of the destination, from
	// which a SUBSCRIBE with a position recovers (Config.History): every
	// message published to it goes through Config.History.Log. A
	// latest-value subscription ignores a position (policy files refuse
	// the two together). Nil: none.
	History *history.Retention
}

// DestinationObserver is an Observer that also counts what the
// per-destination options do (Config.Destinations); the server checks its
// Observer for it. The rule is DestinationOptions.Rule.
type DestinationObserver interface {
	// LatestReplaced reports a MESSAGE of a latest-value subscription
	// that replaced one still waiting to be written, which its
	// subscriber will therefore never get.
	LatestReplaced(rule string)
	// SubscriberCapRefused reports a SUBSCRIBE refused because its
	// destination held DestinationOptions.MaxSubscribers already.
	SubscriberCapRefused(rule string)
}

// SubscriberSlots holds the subscriber caps of destinations across
// instances (Config.SubscriberSlots), for example as leases in a store
// every instance shares. Acquire takes one of the max places of dest,
// the broker destination a SUBSCRIBE is for: ok false when all are
// taken. When ok, release gives the place back; the server calls it once,
// when the subscription ends (UNSUBSCRIBE, or its session's end however
// it ends). An error means the store could not decide: the server then
// decides on its own count. Acquire runs on the subscribing session's
// reader and must bound its own wait; it must be safe for concurrent use.
type SubscriberSlots interface {
	Acquire(ctx context.Context, dest string, max int) (release func(), ok bool, err error)
}

// destinationOptions returns dest's options: Config.Destinations' answer,
// or the zero options without one.
func (s *Server) destinationOptions(dest string) DestinationOptions {
	if s.cfg.Destinations == nil {
		return DestinationOptions{}
	}
	return s.cfg.Destinations(dest)
}

// subscribe adds sub to the broker within opts' cap, and reports whether
// the session is ending: over the cap it fails with ERROR "subscriber
// limit reached" (receipt-id set when the SUBSCRIBE asked for a receipt)
// and a close, as STOMP 1.2 "ERROR" requires of the server. dest is the
// destination the client named.
//
// With Config.SubscriberSlots the cap holds across instances: a place
// is taken there first, and the broker's own count, which can only be
// lower, still guards this server.
func (s *session) subscribe(sub *broker.Subscription, opts DestinationOptions, dest, receipt string) (end bool) {
	var release func()
	ok := true
	if slots := s.srv.cfg.SubscriberSlots; slots != nil && opts.MaxSubscribers > 0 {
		var err error
		release, ok, err = slots.Acquire(context.Background(), sub.Destination, opts.MaxSubscribers)
		if err != nil {
			release, ok = nil, true
		}
	}
	if ok {
		if _, ok = s.srv.cfg.Broker.SubscribeMax(sub, opts.MaxSubscribers); !ok && release != nil {
			release()
		}
	}
	if !ok {
		if d := s.srv.dest; d != nil {
			d.SubscriberCapRefused(opts.Rule)
		}
		s.fail(ending{reason: outcome.CloseSubscriberCap, receipt: receipt,
			detail: fmt.Sprintf("%q has its most subscribers, %d; try again later", dest, opts.MaxSubscribers)})
		return true
	}
	if s.subs == nil {
		s.subs = make(map[string]*broker.Subscription)
	}
	s.subs[sub.ID] = sub
	s.srv.reg.subscribed(s, sub.Destination)
	if release != nil {
		if s.slots == nil {
			s.slots = make(map[string]func())
		}
		s.slots[sub.ID] = release
	}
	return false
}

// unsubscribe removes sub, the subscription id, from the broker and gives
// back its place in SubscriberSlots if it holds one.
func (s *session) unsubscribe(id string, sub *broker.Subscription) {
	s.srv.cfg.Broker.Unsubscribe(sub)
	endHistory(sub)
	s.srv.reg.unsubscribed(s, sub.Destination)
	s.leavePresence(id) // presence membership: presence.go
	if release := s.slots[id]; release != nil {
		delete(s.slots, id)
		release()
	}
}
