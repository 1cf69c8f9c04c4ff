package main

import (
	"context"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/sessioncap"
)

// destinationOptions are the options the server applies to a SUBSCRIBE
// of dest (latest-value delivery, subscriber cap) from the destination
// rule in force, read at each call so that a reload applies to the next
// SUBSCRIBE.
func (a *app) destinationOptions(dest string) server.DestinationOptions {
	o := a.rules.Options(dest)
	return server.DestinationOptions{Rule: o.Rule, Latest: o.Latest, MaxSubscribers: o.MaxSubscribers, History: a.rules.historyOf(dest)}
}

var _ server.DestinationObserver = observer{}

// LatestReplaced counts a latest-value MESSAGE that replaced a waiting one.
func (o observer) LatestReplaced(rule string) { o.m.LatestReplaced(rule) }

// SubscriberCapRefused counts a SUBSCRIBE refused at its destination's cap.
func (o observer) SubscriberCapRefused(rule string) { o.m.SubscriberCapRefused(rule) }

// subscriberSlots holds the destinations' subscriber caps as leases of
// the session caps' Limiter (scope destination), so that with -redis-url
// a cap holds across every instance: a lease is renewed while its
// subscription lasts and expires within -session-lease-ttl of an
// instance that crashed. Without Redis it is not used: each server's own
// count is the cap, exact for one instance.
type subscriberSlots struct{ caps *sessioncap.Limiter }

var _ server.SubscriberSlots = subscriberSlots{}

// Acquire takes a lease of one of dest's max places.
func (s subscriberSlots) Acquire(ctx context.Context, dest string, max int) (func(), bool, error) {
	lease, d, err := s.caps.Acquire(ctx, outcome.CapScopeDestination, dest, max)
	if err != nil || !d.Allowed {
		return nil, false, err
	}
	return func() { s.caps.Release(lease) }, true, nil
}

// subscriberSlots returns the cross-instance subscriber caps with
// -redis-url, nil without it.
func (a *app) subscriberSlots() server.SubscriberSlots {
	if a.redis == nil || a.caps == nil {
		return nil
	}
	return subscriberSlots{a.caps}
}
