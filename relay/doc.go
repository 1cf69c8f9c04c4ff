// Package relay carries topic messages between stompgate instances
// through Redis Pub/Sub, so that several instances behind a load balancer
// serve one set of topics. A session stays on the instance it connected
// to; only messages cross.
//
// # Model
//
// Every instance has its own in-process broker. The relay is the broker's
// Hooks: when a destination gains its first local subscription the relay
// subscribes to the destination's channel, and when it loses its last one
// the relay unsubscribes, so an instance receives only the messages some
// local session wants. The relay is also the server's Relay: every SEND
// that passed the interceptor chain is delivered locally by the server and
// handed to the relay, which publishes it. Redis echoes a message to every
// subscriber, the publishing instance included; each message carries its
// instance's random id and the relay skips its own, so a local subscriber
// gets a message exactly once. Message ids keep the publishing broker's
// id, whose random per-process prefix keeps them unique across instances.
//
// Delivery across instances is at most once, like the broker's: a message
// published while Redis is unreachable, or before the receiving instance's
// SUBSCRIBE reached Redis, is not delivered there.
//
// # Order and batching
//
// The session's path never waits for Redis. Publish puts the message on a
// bounded queue (Config.QueueSize) and returns; when the queue is full the
// message is dropped and counted. One publisher goroutine drains the
// queue, up to Config.BatchSize messages at a time, into one pipeline of
// PUBLISH commands: one round trip per batch, not per message. One
// goroutine and one pipeline in flight keep the messages in the order they
// were published; one receiver per subscription connection delivers them
// in the order Redis sends them. So two messages of one publisher to one
// destination arrive in order everywhere.
//
// # Channels
//
// With a single Redis (or Sentinel), plain Pub/Sub on the channel
//
//	stompgate:topic:{<destination>}
//
// With Redis Cluster (a *redis.ClusterClient), sharded Pub/Sub (Redis 7
// SPUBLISH and SSUBSCRIBE): a message is handled only by the shard that
// owns its channel's slot, so the Pub/Sub load spreads over the shards
// instead of being broadcast through the whole cluster bus. The channel
// is
//
//	stompgate:topic:{<group>}<destination>
//
// where group is FNV-1a of the destination modulo Config.ShardGroups
// (default 64). The hash tag puts every channel of a group in one slot:
// the relay holds one subscription connection per group in use, to that
// slot's master, and go-redis' reconnect, which subscribes a connection to
// all its channels in one command, stays valid. Instances sharing a Redis
// must use the same Prefix and ShardGroups.
//
// # Wire format
//
// A payload is
//
//	version    1 byte, 1
//	instance   uvarint length, bytes: the publishing relay's id
//	message-id uvarint length, bytes
//	destination uvarint length, bytes
//	headers    uvarint count, then per header: uvarint length, name,
//	           uvarint length, value (the SEND's user headers)
//	body       the rest of the payload
//
// with lengths as encoding/binary uvarints. A payload that does not parse,
// or carries a header the broker sets itself, is dropped and counted.
//
// # Outages
//
// When Redis is unreachable the relay never blocks the broker or a
// session: local delivery goes on, messages that cannot cross are counted
// (Observer.RelayDropped), and the outage is logged once when it starts
// (Warn) and once when it ends (Info). go-redis reconnects the
// subscription connections and subscribes them again to every channel;
// the relay paces the attempts (Config.RetryInterval) and checks a silent
// connection with PING (Config.PingInterval).
package relay
