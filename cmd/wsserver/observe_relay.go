package main

import "github.com/stompgate/stompgate/metrics"

// The relay's subscription health, as metrics.

func (o observer) RelaySubscriptionsDown(n int) { o.m.SetRelaySubscriptionsDown(n) }

func (o observer) RelayResubscribes(reason string, n int) {
	o.m.RelayResubscribes(metrics.RelayResubscribeReasonOf(reason), n)
}
