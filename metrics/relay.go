package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stompgate/stompgate/outcome"
)

// RelayDirection is the direction label of stompgate_relay_messages_total.
type RelayDirection uint8

// The relay directions. A value outside this list is counted as "other".
const (
	// RelayOther is a direction this package does not name.
	RelayOther RelayDirection = iota
	// RelayOut: messages published to Redis for the other instances.
	RelayOut
	// RelayIn: messages from other instances delivered to the local broker.
	RelayIn
)

// The relay's label values come from package outcome, where package relay
// takes them too: importing relay would bring its Redis client into every
// program that imports metrics.
var relayDirectionLabels = append([]string{labelOther}, outcome.RelayDirections()...)

// RelayDirectionOf returns the RelayDirection of a direction the relay
// reported ("out", relay.DirectionIn); anything else is
// RelayOther.
func RelayDirectionOf(direction string) RelayDirection {
	return enumOf[RelayDirection](relayDirectionLabels, direction)
}

// String returns the label value d is counted under.
func (d RelayDirection) String() string { return labelOf(relayDirectionLabels, d) }

// RelayDropReason is the reason label of stompgate_relay_dropped_total.
type RelayDropReason uint8

// The reasons a message could not cross between instances. A value
// outside this list is counted as "other".
const (
	// RelayDropOther is a reason this package does not name.
	RelayDropOther RelayDropReason = iota
	// RelayDropQueueFull: the relay's outbound queue was full.
	RelayDropQueueFull
	// RelayDropRedisError: the PUBLISH failed (Redis unreachable or slow).
	RelayDropRedisError
	// RelayDropMalformed: a message received from Redis did not parse.
	RelayDropMalformed
	// RelayDropTooLarge: a payload was larger than the relay's limit
	// (-relay-max-payload), sent or received.
	RelayDropTooLarge
	// RelayDropUnsigned: with -relay-key, a payload from Redis was not
	// signed.
	RelayDropUnsigned
	// RelayDropBadSignature: with -relay-key, a payload from Redis was
	// signed with another key, or altered.
	RelayDropBadSignature
	// RelayDropStale: with -relay-key, a payload from Redis was
	// timestamped too far from this instance's clock (a replay).
	RelayDropStale
)

var relayDropReasonLabels = append([]string{labelOther}, outcome.RelayDrops()...)

// RelayDropReasonOf returns the RelayDropReason of a reason the relay
// reported (relay.Drop*); anything else is RelayDropOther.
func RelayDropReasonOf(reason string) RelayDropReason {
	return enumOf[RelayDropReason](relayDropReasonLabels, reason)
}

// String returns the label value r is counted under.
func (r RelayDropReason) String() string { return labelOf(relayDropReasonLabels, r) }

// RelayResubscribeReason is the reason label of
// stompgate_relay_resubscribes_total.
type RelayResubscribeReason uint8

// The reasons a relay subscription connection is replaced. A value
// outside this list is counted as "other".
const (
	// RelayResubscribeOther is a reason this package does not name.
	RelayResubscribeOther RelayResubscribeReason = iota
	// RelayResubscribeMoved: Redis Cluster moved the channels' slot to
	// another master (a reshard or a failover).
	RelayResubscribeMoved
	// RelayResubscribeConnection: the connection failed.
	RelayResubscribeConnection
	// RelayResubscribeUnanswered: a PING or a subscription confirmation
	// went unanswered (a half-open connection).
	RelayResubscribeUnanswered
)

var relayResubscribeReasonLabels = append([]string{labelOther}, outcome.RelayResubscribes()...)

// RelayResubscribeReasonOf returns the RelayResubscribeReason of a
// reason the relay reported (relay.Resubscribe*); anything else is
// RelayResubscribeOther.
func RelayResubscribeReasonOf(reason string) RelayResubscribeReason {
	return enumOf[RelayResubscribeReason](relayResubscribeReasonLabels, reason)
}

// String returns the label value r is counted under.
func (r RelayResubscribeReason) String() string {
	return labelOf(relayResubscribeReasonLabels, r)
}

// relayMetrics are the cross-instance relay's collectors.
type relayMetrics struct {
	messages          []prometheus.Counter
	dropped           []prometheus.Counter
	disconnectDropped []prometheus.Counter
	resubscribes      []prometheus.Counter
	outage            prometheus.Gauge
	subscriptions     prometheus.Gauge
	subscriptionsDown prometheus.Gauge
}

func (m *Metrics) buildRelay(b *builder) {
	messages := b.counterVec("stompgate_relay_messages_total",
		"Messages relayed between instances through Redis, by direction (out: published, in: received and delivered locally).",
		"direction")
	m.relay.messages = resolveAll(relayDirectionLabels, messages.WithLabelValues)
	dropped := b.counterVec("stompgate_relay_dropped_total",
		"Messages that could not cross between instances, by reason.", "reason")
	m.relay.dropped = resolveAll(relayDropReasonLabels, dropped.WithLabelValues)
	disconnectDropped := b.counterVec("stompgate_relay_disconnect_dropped_total",
		"Disconnect requests from Redis that were ignored, by reason (too_large, malformed, and with -relay-key unsigned, bad_signature, stale).", "reason")
	m.relay.disconnectDropped = resolveAll(relayDropReasonLabels, disconnectDropped.WithLabelValues)
	m.relay.outage = b.gauge("stompgate_relay_outage",
		"1 while the cross-instance relay cannot reach Redis, else 0.")
	m.relay.subscriptions = b.gauge("stompgate_relay_subscriptions",
		"Redis channels the relay is subscribed to: destinations with local subscribers.")
	m.relay.subscriptionsDown = b.gauge("stompgate_relay_subscriptions_down",
		"Redis channels the relay wants but has no live subscription for (lost to a slot move or a failed connection and not yet subscribed again); messages from other instances on them are lost meanwhile.")
	resubscribes := b.counterVec("stompgate_relay_resubscribes_total",
		"Relay subscription connections replaced, with every channel they carried, by reason.", "reason")
	m.relay.resubscribes = resolveAll(relayResubscribeReasonLabels, resubscribes.WithLabelValues)
}

// RelayResubscribes counts n relay subscription connections replaced
// (stompgate_relay_resubscribes_total{reason}). n <= 0 counts nothing.
func (m *Metrics) RelayResubscribes(r RelayResubscribeReason, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.relay.resubscribes[known(relayResubscribeReasonLabels, r)].Add(float64(n))
}

// SetRelaySubscriptionsDown sets stompgate_relay_subscriptions_down, the
// number of channels the relay wants without a live subscription.
func (m *Metrics) SetRelaySubscriptionsDown(n int) {
	if m == nil {
		return
	}
	m.relay.subscriptionsDown.Set(float64(n))
}

// RelayMessages counts n messages relayed in direction d
// (stompgate_relay_messages_total{direction}). n <= 0 counts nothing.
func (m *Metrics) RelayMessages(d RelayDirection, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.relay.messages[known(relayDirectionLabels, d)].Add(float64(n))
}

// RelayDropped counts n messages that could not cross between instances
// (stompgate_relay_dropped_total{reason}). n <= 0 counts nothing.
func (m *Metrics) RelayDropped(r RelayDropReason, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.relay.dropped[known(relayDropReasonLabels, r)].Add(float64(n))
}

// RelayDisconnectDropped counts n disconnect requests between instances
// that were ignored (stompgate_relay_disconnect_dropped_total{reason}).
// n <= 0 counts nothing.
func (m *Metrics) RelayDisconnectDropped(r RelayDropReason, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.relay.disconnectDropped[known(relayDropReasonLabels, r)].Add(float64(n))
}

// SetRelayOutage sets stompgate_relay_outage to 1 while the relay cannot
// reach Redis, 0 when it can.
func (m *Metrics) SetRelayOutage(active bool) {
	if m == nil {
		return
	}
	if active {
		m.relay.outage.Set(1)
	} else {
		m.relay.outage.Set(0)
	}
}

// SetRelaySubscriptions sets stompgate_relay_subscriptions, the number of
// Redis channels the relay is subscribed to.
func (m *Metrics) SetRelaySubscriptions(n int) {
	if m == nil {
		return
	}
	m.relay.subscriptions.Set(float64(n))
}
