// Package streams keeps the histories of package history in Redis
// Streams, shared by every instance: Store (a history.Store) and
// Publisher, which appends and publishes without making its caller
// wait. The model (offsets, epochs and when they change, recovery, the
// trust model of frames) is package history's; this is how Redis holds
// it.
//
// # Keys
//
// Each destination has two keys sharing one hash tag, so that one
// script can touch both on Redis Cluster:
//
//	<prefix>hist:{<dest>}:m   hash: e epoch, l last offset, t Redis ms of
//	                          the last append, r run_id of its writer
//	<prefix>hist:{<dest>}:s   stream: entry <offset>-0, fields t, d
//
// When the destination's channel has another hash tag (the relay's
// shard group on Cluster) the keys take it, and the destination follows
// it (<prefix>hist:{<group>}<dest>:m), so that the keys share a slot with
// the channel and the script can SPUBLISH on it (Config.Tag). append.lua, for the destinations of one slot at once,
// reads the meta hash, starts a new epoch if continuity was lost,
// assigns the next offsets, XADDs each message with MAXLEN ~ Keep,
// PUBLISHes (SPUBLISH on Cluster) its frame, trims entries older than
// For every 32 offsets, sets the stream to expire For after the append
// and the meta hash EpochTTL after it, all atomically: history order is
// delivery order, on every instance, whichever instance published.
// Clocks are Redis TIME. tail.lua reads the newest entries the same
// way, skipping entries older than For that no append trimmed yet.
//
// The Publisher sends what is queued as one pipeline, one script run
// per hash slot in the batch (one in all off Cluster), never waiting in
// the caller's path. A run refused with NOSCRIPT is sent again with the
// script; any other failure is counted and not retried, since a run that
// timed out may have appended.
//
// # Continuity
//
// Both scripts start a new epoch (and drop the stream) when the meta
// hash is missing, when the stream is missing while the meta hash says
// its latest entry is younger than For, and when the meta hash was
// written by another Redis process (its run_id, read with INFO once per
// script run): Redis emptied, restarted or failed over. tail.lua does
// not create a history that does not exist: it answers no epoch.
//
// Redis should not evict these keys (maxmemory-policy noeviction, which
// the server checks at start-up); if it does, the epoch changes and the
// clients are told, rather than read across the hole.
package streams
