package outcome

// The directions of messages between instances
// (stompgate_relay_messages_total{direction}).
const (
	// RelayOut: messages published to Redis for the other instances.
	RelayOut = "out"
	// RelayIn: messages from other instances handed to the local broker.
	RelayIn = "in"
)

// RelayDirections returns every relay direction. The slice is a fresh
// copy.
func RelayDirections() []string { return []string{RelayOut, RelayIn} }

// Why a message could not cross between instances
// (stompgate_relay_dropped_total{reason},
// stompgate_relay_disconnect_dropped_total{reason}).
const (
	// RelayDropQueueFull: the relay's outbound queue was full.
	RelayDropQueueFull = "queue_full"
	// RelayDropRedisError: the PUBLISH failed (Redis unreachable, timeout).
	RelayDropRedisError = "redis_error"
	// RelayDropMalformed: a received payload was not in the wire format.
	RelayDropMalformed = "malformed"
	// RelayDropTooLarge: a payload, sent or received, was larger than the
	// relay's limit.
	RelayDropTooLarge = "too_large"
	// RelayDropUnsigned: with a relay key, a received payload was not
	// signed.
	RelayDropUnsigned = "unsigned"
	// RelayDropBadSignature: with a relay key, a received payload's mac
	// did not match: signed with another key, or altered.
	RelayDropBadSignature = "bad_signature"
	// RelayDropStale: with a relay key, a received payload's timestamp
	// was too far from this instance's clock (a replay, or clocks apart).
	RelayDropStale = "stale"
)

// RelayDrops returns every relay drop reason. The slice is a fresh copy.
func RelayDrops() []string {
	return []string{RelayDropQueueFull, RelayDropRedisError, RelayDropMalformed,
		RelayDropTooLarge, RelayDropUnsigned, RelayDropBadSignature, RelayDropStale}
}

// Why a relay subscription connection was replaced
// (stompgate_relay_resubscribes_total{reason}).
const (
	// RelayResubscribeMoved: Redis Cluster moved the channels' slot to
	// another master (a reshard or a failover).
	RelayResubscribeMoved = "moved"
	// RelayResubscribeConnection: the subscription connection failed.
	RelayResubscribeConnection = "connection"
	// RelayResubscribeUnanswered: a PING or a subscription confirmation
	// went unanswered (a half-open connection).
	RelayResubscribeUnanswered = "unanswered"
)

// RelayResubscribes returns every resubscribe reason. The slice is a
// fresh copy.
func RelayResubscribes() []string {
	return []string{RelayResubscribeMoved, RelayResubscribeConnection, RelayResubscribeUnanswered}
}
