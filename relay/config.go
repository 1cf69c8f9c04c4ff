package relay

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Defaults, each with the reason for its value.
const (
	// DefaultPrefix starts every channel name.
	DefaultPrefix = "stompgate:topic:"
	// DefaultQueueSize is the capacity of the outbound queue in messages.
	// It absorbs a burst of about a second at 8,000 SENDs/s while one
	// pipeline is in flight; beyond it messages are dropped (counted), the
	// session never waits.
	DefaultQueueSize = 8192
	// DefaultQueueBytes bounds the same queue in bytes: 32 MiB holds that
	// second of 4 KiB messages, where 8,192 messages at the 64 KiB frame
	// limit would hold 512 MiB while Redis is slow.
	DefaultQueueBytes = 32 << 20
	// DefaultBatchSize is the most PUBLISH commands sent in one pipeline:
	// large enough that one round trip carries a burst, small enough that
	// a batch of 64 KiB messages stays within a few MiB.
	DefaultBatchSize = 256
	// DefaultTimeout bounds one pipeline and one SUBSCRIBE or UNSUBSCRIBE:
	// a local Redis answers a full batch in about a millisecond.
	DefaultTimeout = time.Second
	// DefaultPingInterval is how long a subscription connection may be
	// silent before it is checked with PING. A Redis that stops answering
	// without closing the socket (a paused or partitioned node) is found
	// within PingInterval + PingTimeout: 2 s, about a Redis Cluster
	// failover with cluster-node-timeout 2000, so that the relay is ready
	// to follow the promoted replica when it takes over. It costs one
	// PING a second per idle connection.
	DefaultPingInterval = time.Second
	// DefaultPingTimeout is how long a PING, or a new subscription's
	// confirmation, may go unanswered before the connection is closed and
	// replaced. A local Redis answers in well under a millisecond; a
	// second tolerates a loaded machine.
	DefaultPingTimeout = time.Second
	// DefaultRetryInterval is the pause between two attempts to reach
	// Redis again after the subscription connection failed.
	DefaultRetryInterval = 250 * time.Millisecond
	// DefaultShardGroups is the number of hash slots channels are spread
	// over on Redis Cluster (see the package documentation). Each group
	// in use holds one subscription connection per instance.
	DefaultShardGroups = 64
	// maxShardGroups bounds ShardGroups: a Redis Cluster has 16384 slots.
	maxShardGroups = 16384
	// PayloadOverhead is what a payload may hold beyond the STOMP frame
	// it carries: the envelope (about 50 bytes: version, flags, mac,
	// timestamp, instance id) and length prefixes, which for up to 64
	// headers of any length take a few hundred bytes more than the
	// frame's own separators. 4 KiB leaves room to spare.
	PayloadOverhead = 4 << 10
	// DefaultMaxPayload is the largest payload sent or accepted: a frame
	// at stompframe's default limit plus PayloadOverhead. A subscriber is
	// never handed, through Redis, more than a client could send it
	// directly.
	DefaultMaxPayload = stompframe.DefaultMaxFrameSize + PayloadOverhead
	// DefaultMaxAge is how far a signed payload's timestamp may be from
	// the receiver's clock, either way: 30 s covers the clock skew of
	// instances kept by NTP (well under a second) and a Redis that holds
	// a backlog for a while, and bounds how long a captured message can
	// be replayed.
	DefaultMaxAge = 30 * time.Second
)

// Config configures a Relay. Client is required; every other zero field
// takes the default named in its comment.
type Config struct {
	// Client is the connection to Redis: a single node or Sentinel client
	// (plain Pub/Sub, PUBLISH and SUBSCRIBE) or a *redis.ClusterClient
	// (sharded Pub/Sub, SPUBLISH and SSUBSCRIBE, Redis 7 or later).
	// internal/redisclient builds one from a URL. The relay does
	// not close it.
	Client redis.UniversalClient
	// Prefix starts every channel name. Default DefaultPrefix. It must not
	// contain '{' or '}', which would change the hash tag.
	Prefix string
	// QueueSize is the outbound queue capacity in messages. Default
	// DefaultQueueSize; negative is an error.
	QueueSize int
	// QueueBytes bounds the outbound queue in bytes (each message's
	// broker.Message.MemSize as it is queued): a message that would take
	// the queue past it is dropped and counted like one past QueueSize.
	// Default DefaultQueueBytes; negative is an error.
	QueueBytes int
	// BatchSize is the most messages published in one pipeline. Default
	// DefaultBatchSize; negative is an error.
	BatchSize int
	// Timeout bounds one pipeline and one subscription change. Default
	// DefaultTimeout; negative is an error.
	Timeout time.Duration
	// PingInterval is how long a silent subscription connection waits
	// before it is checked with PING. Default DefaultPingInterval;
	// negative is an error.
	PingInterval time.Duration
	// PingTimeout is how long a PING or a subscription confirmation may
	// go unanswered before the connection is replaced (counted in
	// Observer.RelayResubscribes with ResubscribeUnanswered). Default
	// DefaultPingTimeout; negative is an error.
	PingTimeout time.Duration
	// RetryInterval is the pause before reconnecting a subscription
	// connection whose last attempt failed, and between the publisher's
	// checks of Redis while it is unreachable. A connection lost after it
	// worked is replaced at once. Default DefaultRetryInterval; negative
	// is an error.
	RetryInterval time.Duration
	// ShardGroups is, on Redis Cluster only, the number of hash slots the
	// channels are spread over. Default DefaultShardGroups; negative or
	// above 16384 is an error.
	ShardGroups int
	// MaxPayload is the largest payload, in bytes, the relay publishes or
	// accepts from Redis. A message whose encoding is larger is dropped
	// before it is published, and a received payload that is larger is
	// dropped before it is decoded; both counted as DropTooLarge.
	// Default DefaultMaxPayload; negative is an error. Set it to the
	// frame limit in force plus PayloadOverhead.
	MaxPayload int
	// Key, when set, signs every payload (HMAC-SHA256, see Signer) and
	// makes the relay drop received payloads that are unsigned
	// (DropUnsigned), signed with another key (DropBadSignature) or
	// timestamped more than MaxAge from this instance's clock
	// (DropStale). Every instance must have the same key; it must be at
	// least MinKeyLen bytes. Empty (the default): payloads are unsigned
	// and anything that can PUBLISH to Redis can deliver messages to
	// every subscriber.
	Key string
	// MaxAge bounds, with a Key, how far a payload's timestamp may be
	// from this instance's clock. Default DefaultMaxAge; negative is an
	// error.
	MaxAge time.Duration
	// Observer is told about relayed and dropped messages. Nil: none.
	Observer Observer
	// Logger receives the state changes: Warn when Redis becomes
	// unreachable and Info when it is back; Warn when subscriptions are
	// lost (a slot moved, a connection failed) and Info when every
	// channel is subscribed again, one pair per storm, not per channel.
	// Nil means slog.Default().
	Logger *slog.Logger
	// Tracer records the delivery of the traced messages that come from
	// other instances. Nil: none.
	Tracer Tracer
}

// Tracer continues, on this instance, the trace of a message published
// on another; package tracing implements it, as it does server.Tracer.
type Tracer interface {
	// Deliver starts the span of the delivery of the message to dest
	// whose trace is traceparent; end is called once it was handed to
	// the local subscribers.
	Deliver(traceparent, dest string) (end func())
}

// The direction label values of Observer.RelayMessages.
const (
	// DirectionOut: messages published to Redis for other instances.
	DirectionOut = outcome.RelayOut
	// DirectionIn: messages from other instances handed to the local
	// broker.
	DirectionIn = outcome.RelayIn
)

// The reason label values of Observer.RelayDropped.
const (
	// DropQueueFull: the outbound queue was full.
	DropQueueFull = outcome.RelayDropQueueFull
	// DropRedisError: the PUBLISH failed (Redis unreachable, timeout).
	DropRedisError = outcome.RelayDropRedisError
	// DropMalformed: a received payload was not in the wire format.
	DropMalformed = outcome.RelayDropMalformed
	// DropTooLarge: a payload, sent or received, was larger than
	// Config.MaxPayload.
	DropTooLarge = outcome.RelayDropTooLarge
	// DropUnsigned: with a Config.Key, a received payload was not
	// signed.
	DropUnsigned = outcome.RelayDropUnsigned
	// DropBadSignature: with a Config.Key, a received payload's mac did
	// not match: signed with another key, or altered.
	DropBadSignature = outcome.RelayDropBadSignature
	// DropStale: with a Config.Key, a received payload's timestamp was
	// more than Config.MaxAge from this instance's clock (a replay, or
	// clocks apart).
	DropStale = outcome.RelayDropStale
)

// The reason label values of Observer.RelayResubscribes.
const (
	// ResubscribeMoved: Redis Cluster moved the channels' slot to
	// another master (Redis unsubscribed them, or answered MOVED).
	ResubscribeMoved = outcome.RelayResubscribeMoved
	// ResubscribeConnection: the subscription connection failed.
	ResubscribeConnection = outcome.RelayResubscribeConnection
	// ResubscribeUnanswered: a PING or a subscription confirmation went
	// unanswered for PingTimeout (a half-open connection).
	ResubscribeUnanswered = outcome.RelayResubscribeUnanswered
)

// Observer receives the relay's events, for metrics. Its methods are
// called from the relay's goroutines and from Publish, concurrently; they
// must be cheap and must not block.
type Observer interface {
	// RelayMessages counts n messages relayed in direction DirectionOut
	// or DirectionIn.
	RelayMessages(direction string, n int)
	// RelayDropped counts n messages that could not cross, by reason.
	RelayDropped(reason string, n int)
	// RelayOutage is true while Redis is unreachable.
	RelayOutage(active bool)
	// RelaySubscriptions is the number of channels the relay is
	// subscribed to: the destinations with local subscribers.
	RelaySubscriptions(n int)
	// RelaySubscriptionsDown is the number of those channels without a
	// live subscription in Redis: lost and not yet subscribed again, or
	// just subscribed and not yet confirmed. Messages published to them
	// meanwhile do not reach this instance.
	RelaySubscriptionsDown(n int)
	// RelayResubscribes counts n subscription connections replaced, by
	// reason (ResubscribeMoved, ResubscribeConnection,
	// ResubscribeUnanswered); each carries every channel of its shard
	// group.
	RelayResubscribes(reason string, n int)
	// Delivered counts n local subscribers that were handed a message
	// from another instance.
	Delivered(destination string, n int)
}

type nopObserver struct{}

func (nopObserver) RelayMessages(string, int)     {}
func (nopObserver) RelayDropped(string, int)      {}
func (nopObserver) RelayOutage(bool)              {}
func (nopObserver) RelaySubscriptions(int)        {}
func (nopObserver) RelaySubscriptionsDown(int)    {}
func (nopObserver) RelayResubscribes(string, int) {}
func (nopObserver) Delivered(string, int)         {}

// withDefaults returns a validated copy of c with defaults filled in.
func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, configErrorf("Client is nil")
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	for _, r := range c.Prefix {
		if r == '{' || r == '}' {
			return c, configErrorf("Prefix %q contains a brace", c.Prefix)
		}
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{
		{"QueueSize", &c.QueueSize, DefaultQueueSize},
		{"QueueBytes", &c.QueueBytes, DefaultQueueBytes},
		{"BatchSize", &c.BatchSize, DefaultBatchSize},
		{"ShardGroups", &c.ShardGroups, DefaultShardGroups},
		{"MaxPayload", &c.MaxPayload, DefaultMaxPayload},
	} {
		if *n.v < 0 {
			return c, configErrorf("%s %d is negative", n.name, *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	if c.ShardGroups > maxShardGroups {
		return c, configErrorf("ShardGroups %d is above the %d slots of a Redis Cluster", c.ShardGroups, maxShardGroups)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &c.Timeout, DefaultTimeout},
		{"PingInterval", &c.PingInterval, DefaultPingInterval},
		{"PingTimeout", &c.PingTimeout, DefaultPingTimeout},
		{"RetryInterval", &c.RetryInterval, DefaultRetryInterval},
		{"MaxAge", &c.MaxAge, DefaultMaxAge},
	} {
		if *d.v < 0 {
			return c, configErrorf("%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
