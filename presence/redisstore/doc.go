// Package redisstore keeps presence (package presence) in Redis, shared
// by every instance: each instance's members are visible everywhere, and
// the members of an instance that dies leave within its lease.
//
// # Keys
//
// One destination's state sits under one hash tag, so that each script
// call touches one Redis Cluster slot:
//
//	<prefix>{<destination>}:m    hash  "<instance>|<principal>" -> "<sessions>|<info>"
//	<prefix>{<destination>}:p    hash  principal -> instances holding a share of it
//	<prefix>{<destination>}:i    zset  instance -> the end of its lease (Redis time, ms)
//	<prefix>{<destination>}:seq  the destination's event counter
//
// One script (presence.lua, run by EVALSHA with EVAL on NOSCRIPT) does
// every write: a principal's share of this instance, set or removed; a
// lease renewal; a snapshot read. A join is the :p count of a principal
// going from 0 to 1, a leave from 1 to 0; each is numbered by INCR of
// :seq and PUBLISHed in the same script, so the order of the channel is
// the order of the numbers. Redis TIME is the clock.
//
// # Leases, and dead instances
//
// An instance holds a lease in each destination where it has members:
// its entry in :i, which it renews every LeaseTTL/3 to 2/3 of LeaseTTL
// ahead (one missed renewal is survived), every room in one pipeline. Every script call first removes
// the shares of every other instance whose lease ended, with a leave for
// each principal that no other instance holds. The instances that watch
// a destination renew it too (without a lease of their own), so a dead
// instance's members leave within LeaseTTL (the session caps' lease TTL,
// -session-lease-ttl) even when no living instance has members there.
// A share is never given a TTL of its own: the cost of a lease is one
// small script per destination and instance every LeaseTTL/3, whatever the
// number of members.
//
// An instance that shuts down cleanly leaves its shares to its lease:
// its users, reconnecting to the instances left within it, are neither a
// leave nor a join.
//
// # Events
//
// All destinations share one Pub/Sub channel, <prefix>events, with
// messages such as
//
//	{"d":"/topic/room.42","e":[{"s":18,"o":"join","p":"carol","i":"Carol"}]}
//
// Each instance reads them all and hands those of destinations it watches
// to its tracker; a message over MaxPayload or not in this form is
// dropped and counted. A message lost (Redis Pub/Sub is at most once) is
// found by the gap in the numbers at the next event or, when no event
// follows, by the watching instance's renewals (the counter still ahead
// of what the channel brought one renewal later: presence.OpSync), and
// repaired by a fresh snapshot. The messages are not signed: the state they report
// lives in keys that whoever can PUBLISH to this Redis can also write,
// and a watcher's snapshot is read from the keys.
package redisstore
