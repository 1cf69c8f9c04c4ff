package main

import (
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/relay"
)

// The relay's subscription health, as metrics.

func (o observer) RelaySubscriptionsDown(n int) { o.m.SetRelaySubscriptionsDown(n) }

func (o observer) RelayResubscribes(reason string, n int) {
	r := metrics.RelayResubscribeOther
	switch reason {
	case relay.ResubscribeMoved:
		r = metrics.RelayResubscribeMoved
	case relay.ResubscribeConnection:
		r = metrics.RelayResubscribeConnection
	case relay.ResubscribeUnanswered:
		r = metrics.RelayResubscribeUnanswered
	}
	o.m.RelayResubscribes(r, n)
}
