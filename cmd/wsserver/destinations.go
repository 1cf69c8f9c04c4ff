package main

import "github.com/stompgate/stompgate/server"

// destinationSettings are the per-destination options the server applies
// at each SUBSCRIBE (server.Config.Destinations: latest-value delivery,
// subscriber caps) and the names of the rules they come from, which
// metrics label their counts by (metrics.Config.Rules). No flag sets
// them: they come from the policy's destination rules; a program that
// fills settings itself may set them directly. The zero value gives every
// destination the zero options.
type destinationSettings struct {
	destinationRules   []string
	destinationOptions func(dest string) server.DestinationOptions
}

var _ server.DestinationObserver = observer{}

// LatestReplaced counts a latest-value MESSAGE that replaced a waiting one.
func (o observer) LatestReplaced(rule string) { o.m.LatestReplaced(rule) }

// SubscriberCapRefused counts a SUBSCRIBE refused at its destination's cap.
func (o observer) SubscriberCapRefused(rule string) { o.m.SubscriberCapRefused(rule) }
