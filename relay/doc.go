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
// gets a message exactly once. A message from another instance gets its
// message-id from the receiving instance's broker, so that whoever can
// write to Redis does not choose the id a subscriber sees; subscribers on
// two instances see two ids for one message.
//
// Delivery across instances is at most once, like the broker's: a message
// published while Redis is unreachable, or before the receiving instance's
// SUBSCRIBE reached Redis, is not delivered there.
//
// # Order and batching
//
// The session's path never waits for Redis. Publish puts the message on a
// bounded queue (Config.QueueSize messages, Config.QueueBytes bytes) and returns; when the queue is full the
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
// slot's master. Instances sharing a Redis must use the same Prefix and
// ShardGroups.
//
// # Following the cluster
//
// A subscription connection belongs to the relay, not to go-redis'
// reconnect, because where it must go changes: it is opened on the master
// that owns its group's slot, from a slot map reloaded just before, and a
// channel counts as live only once Redis has confirmed it. The connection
// is replaced, with every channel of its group, when
//
//   - Redis unsubscribes a channel the relay still wants, or answers
//     MOVED: the slot moved to another master (a reshard, or a failed-over
//     master that came back as a replica) — reason "moved";
//   - it fails (a killed master, a restarted Redis) — "connection";
//   - a PING, sent after PingInterval of silence, or the confirmation of
//     its subscriptions goes unanswered for PingTimeout: the node stopped
//     answering without closing the socket (paused, partitioned) —
//     "unanswered".
//
// A connection that had worked is replaced at once; an attempt that
// fails is retried after RetryInterval, on a freshly reloaded slot map,
// until the cluster names a master that answers. The publisher reloads
// the slot map after a failed batch too: go-redis learns of a new master
// only from a MOVED answer or a reload every minute, and a dead or paused
// master answers nothing.
//
// The bound: after a slot move, delivery resumes within a round trip or
// two (the unsubscribe arrives, the new SSUBSCRIBE is confirmed); after a
// failover, within RetryInterval + PingTimeout of the cluster reporting
// it complete (an attempt begun just before may wait on the old master
// for PingTimeout), about 1.25 s with the defaults; a half-open
// connection is found within PingInterval + PingTimeout (2 s). Messages
// published meanwhile are lost, at most once: those the publisher could
// not hand to Redis are counted (Observer.RelayDropped, redis_error);
// those Redis took while this instance's subscription was down cannot be
// counted here, but Observer.RelaySubscriptionsDown is above zero for
// exactly that time. The relay logs one Warn when subscriptions are lost
// and one Info when all are live again, per storm, not per channel.
//
// # Wire format
//
// A payload is
//
//	version    1 byte, 2
//	flags      1 byte: 0 unsigned, 1 signed
//	mac        32 bytes, only when signed: HMAC-SHA256 with Config.Key
//	           of everything after it
//	timestamp  uvarint: the publisher's clock, Unix milliseconds
//	instance   uvarint length, bytes: the publishing relay's id
//	destination uvarint length, bytes
//	headers    uvarint count, then per header: uvarint length, name,
//	           uvarint length, value (the SEND's user headers, then
//	           broker.TraceHeader with the message's trace, if it has one)
//	body       the rest of the payload
//
// with lengths as encoding/binary uvarints; flags, mac and timestamp are
// the envelope of Signer, which disconnect requests between instances use
// too. A payload that does not parse, carries a header the broker sets
// itself, or has a destination, header name or value that is not UTF-8,
// is dropped and counted (DropMalformed). The trace header is the one
// reserved name a payload may carry: it becomes the message's trace
// when broker.ValidTrace accepts it, and is ignored otherwise, so that
// an instance that predates it, which passed a client's traceparent on as
// a user header, is still understood. A traced message is followed
// across instances by Config.Tracer.
//
// # Trust
//
// Redis Pub/Sub has no notion of who published. Without Config.Key,
// anything that can PUBLISH to the Redis the instances share (a client
// with its password, a compromised neighbour service) can deliver a
// message to every subscriber of a destination, with any headers. Two
// bounds hold with or without a key: a payload larger than
// Config.MaxPayload is dropped before it is decoded (DropTooLarge), so a
// subscriber never gets, through Redis, more than a client could send it;
// and the message-id is this instance's. With a Key, every payload is
// signed, and a payload that is unsigned (DropUnsigned), signed with
// another key or altered (DropBadSignature), or timestamped more than
// Config.MaxAge from the receiver's clock (DropStale, which bounds replay
// of a captured payload to MaxAge) is dropped and counted. The check costs
// one HMAC over the payload; a relay skips its own messages before it.
//
// # Outages
//
// When Redis is unreachable the relay never blocks the broker or a
// session: local delivery goes on, messages that cannot cross are counted
// (Observer.RelayDropped), and the outage is logged once when it starts
// (Warn) and once when it ends (Info). The relay reaches Redis along
// several paths (the publisher's pool, each subscription connection) that
// come back at different moments; the outage ends only when every one of
// them has worked again, so one outage is one pair of lines. While it
// lasts and nothing is published, the publisher checks Redis with PING
// every RetryInterval. Subscription connections are replaced as above.
//
// # Ending sessions on other instances
//
// Disconnects carries one more kind of message between instances: a
// request to end the sessions of a principal, or one session, wherever
// they are (the server API's disconnect; a session cap that displaces a
// session held elsewhere). It travels on DisconnectChannel in the same
// envelope, signed with the same key, bounded and counted alike.
package relay
