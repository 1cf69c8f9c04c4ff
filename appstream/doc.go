// Package appstream hands the app messages of a server.Server (SENDs to
// server.Config.AppPrefix, "/app/" by default) to a backend through a
// Redis Stream.
//
// Handler is a server.AppHandler: each message is one entry
//
//	<id> destination <d> principal <p> session <s> instance <i>
//	     id <message id> headers <JSON object> body <body>
//
// and the server sends the client's RECEIPT only after Redis answered.
// The backend reads the stream with a consumer group (XREADGROUP, then
// XACK once a message is dealt with): a backend that restarts resumes at
// what it had not acknowledged, and several workers in one group share
// the messages. Parse turns an entry back into a Message.
//
// # A bounded backlog, nothing trimmed unread
//
// What waits for the backend is bounded in bytes per principal, per
// client address and in total, and in entries (Config). An append that
// would pass a bound is refused: HandleApp returns a
// *server.AppBacklogError naming the bound, and the sender gets ERROR
// "backend busy". A message that was appended (and RECEIPTed) stays in
// the stream until every consumer group has acknowledged it; no MAXLEN
// trims it unread.
//
// Each append is one Lua script (append.lua), atomic across instances.
// Beside the stream it keeps two keys, with the stream's hash tag: a
// ledger, a stream with one small entry (principal, address, bytes) per
// message under the same id, and a hash of the bytes waiting in total,
// per principal and per address. The script first releases what every
// group has acknowledged: the ledger's entries below the smallest of
// each group's pending entries and its last-delivered id, at most 1,024
// per call, subtracting them from the counters and trimming them (XTRIM
// MINID) from the ledger, and from the stream by whole radix-tree nodes
// (MINID ~: a node of released entries may linger until the next one
// fills, but no entry at or above the limit is ever removed). Then it
// checks the bounds and
// appends to both. Released means acknowledged, not delivered: a backend
// that crashed mid-read leaves its entries pending, and they stay
// counted (and in the stream) until a worker claims them (XAUTOCLAIM)
// and acknowledges them. A backend must therefore claim stale pending
// entries, or the bounds fill and app SENDs are refused: visibly, in
// stompgate_app_backlog_refusals_total, never silently.
//
// The counters cannot leak: they are a sum over the ledger, a counter
// that reaches zero is deleted, and when the ledger is empty the hash is
// deleted whatever it held (an eviction or a hand edit cannot hold a
// sender back forever); a stream deleted by hand takes its ledger and
// counters with it. Without any consumer group nothing is acknowledged:
// messages wait, up to the bounds, for the backend to create its group.
// A group created at "$" releases what came before it, which it will
// never read.
//
// The script needs Redis 6.2 or later (exclusive XRANGE bounds, XTRIM
// MINID).
//
// The Redis holding the stream should not evict keys (maxmemory-policy
// noeviction, see internal/redisclient.CheckNoEviction): the bounds keep the stream small, and
// an evicted stream loses messages clients were told the backend has.
package appstream
