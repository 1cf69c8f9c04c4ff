// Package history keeps a short history per destination so that a
// subscription that comes back after a disconnect gets what it missed,
// in order, once, or is told plainly that it cannot (recovered:false)
// and reloads its state from its backend. Nothing is lost silently.
//
// # Positions
//
// Every message of a destination with history has a Position: an
// offset, counted from 1 and one more for each message of the
// destination, and an epoch, a random string naming one unbroken run of
// those offsets. A MESSAGE carries both (HeaderOffset x-stream-offset,
// RabbitMQ's name and meaning, and HeaderEpoch x-stream-epoch). A client
// that received offset N of epoch E resumes with a SUBSCRIBE carrying
// x-stream-offset:N+1 and x-stream-epoch:E; RabbitMQ's "first", "last"
// and "next" are accepted too (ParseStart).
//
// An epoch changes whenever the store cannot prove that its offsets
// continue the ones it handed out:
//
//   - Redis: the destination's meta hash is missing (its first append;
//     Redis restarted without persistence; FLUSHALL; the key evicted;
//     or no append for EpochTTL, a day); its stream is missing while the
//     meta hash says the latest entry should still be kept (evicted or
//     deleted); or the meta hash was written by another Redis process
//     (its run_id differs: a restart, even with persistence, or a
//     failover to a replica that may have missed the latest writes,
//     which would otherwise hand out the same offsets twice). A stream
//     that merely expired because nothing was published for For keeps
//     its epoch: a client away longer than that from a quiet room
//     missed nothing, and is told so.
//   - Memory: the history was evicted (MaxDestinations, MaxBytes), or
//     the process restarted.
//
// A position of another epoch is refused with ReasonEpochChanged. This
// errs on the side of "reload": a Redis restart with persistence costs
// its clients one reload each, never a silent gap.
//
// # Recovery
//
// Since decides, from a Snapshot of the history, what a subscription
// that asked for a Start gets: every message from its offset up to the
// newest, or none and a Reason. It never returns part of a gap: an
// offset no longer kept is ReasonTrimmed, more than the recovery bound
// (-recovery-max, DefaultMaxRecovery) is ReasonTooMany, another epoch is
// ReasonEpochChanged, an offset beyond the newest is ReasonAhead, an
// offset without its epoch replays but is not claimed as recovered
// (ReasonNoEpoch), and a store that cannot be read is
// ReasonUnavailable. The subscription starts live in every case.
//
// Replay and live delivery meet in a Recovery: the subscription
// registers for live messages first and notes when, then reads the
// history through a Reader, which only hands it a read that began after
// that instant. Every message published after the registration arrives
// live; every message published before the read began is in the read;
// the two overlap, and the Recovery emits the replay, then the live
// messages it held that follow the replay, dropping the overlap, then
// live messages as they come. What could break the join is reported,
// not skipped: a held message that does not follow the replay (a lost
// Pub/Sub message, an epoch change between the two), more held messages
// than its buffer holds (ReasonOverrun, settled at once so the hold stays
// bounded), and, once live, a message that skips offsets or changes
// epoch (Step.Gap, after which the subscription can recover again).
//
// A herd of subscriptions recovering one room (an instance's sessions
// reconnecting elsewhere after a deploy) shares reads: a Reader starts
// at most one read of a destination per Interval, one at a time, and
// every recovery whose subscription began before a read started is
// answered by it. A read is the newest MaxRecovery entries, which
// answers every start at once.
//
// # Stores
//
// MemoryStore keeps histories in process memory, for a single instance.
// Package history/streams keeps them in Redis Streams, shared by every
// instance, with one script that assigns the offset, appends and
// publishes, so that history order is delivery order everywhere; its
// documentation gives the key layout and the script. This package, like
// the server's core, builds on the standard library alone, so that the
// server can use Since, Recovery and Reader without importing Redis.
//
// # Frames and trust
//
// The Redis store's script publishes each message as a frame (see
// AppendFrame): the byte FrameVersion (3), the offset, the epoch, then
// the payload exactly
// as the publishing instance handed it over, which is the relay's
// signed payload (HMAC-SHA256 with the shared key over the instance id,
// destination, headers, body and timestamp). The stream stores that
// payload too. The offset and epoch are made by Redis inside the script,
// after the instance signed, so they are not covered by the signature:
// they are bounds-checked (offset at least 1, epoch of at most
// MaxEpochLen printable ASCII bytes) and checked for continuity by the
// Recovery.
//
// The trust model is the relay's: Redis is trusted for order and
// availability, not for content. Without a key, anything that can write
// to Redis can publish anything. With one, such an attacker still cannot
// forge or alter a message, nor move it to another destination (the
// signed payload names its destination, which the receiver compares
// with the frame's channel or stream), nor add headers. It can replay a
// captured payload under a new offset, within the signature's age bound
// (the relay's MaxAge live; For plus MaxAge for a replay from history,
// whose payloads are as old as the history), and it can reorder, skip or
// delete, which a writer to Redis can do to the history anyway, and
// which shows as a gap, a dropped duplicate or a new epoch rather than
// as wrong content. Signing the offset as well would need the offset
// before the script runs: a round trip and a retry whenever two
// instances publish to one room at once, or a lock, for no protection
// against someone who can delete the stream.
//
// # Bounds
//
//	bound                         default  why
//	Retention.Keep                1000     DefaultKeep: a busy room's last minutes
//	Retention.For                 10m      DefaultFor: a network change or a deploy
//	Reader.MaxRecovery            1000     DefaultMaxRecovery (-recovery-max): one history
//	NewRecovery maxBuffer         1000     DefaultMaxBuffer: live messages held during a read
//	NewRecovery maxBytes          4 MiB    DefaultMaxBufferBytes: a session's outbound queue
//	Reader.Interval               100ms    DefaultInterval: reads per room per instance
//	Reader.MaxFlights             1024     DefaultMaxFlights: rooms read at once
//	MemoryConfig.MaxDestinations  10000    DefaultMaxDestinations
//	MemoryConfig.MaxBytes         64 MiB   DefaultMaxBytes
//	streams.Config.EpochTTL       24h      quiet rooms keep their epoch
//	streams.Config.Timeout        1s       one script or pipeline
//	streams.PublisherConfig       8192 messages, 32 MiB, batches of 256, as the relay's queue
//	MaxKeep, MaxFor               100000, 24h: the most a Retention may ask
//	MaxEpochLen                   64       epochs on the wire and in headers
//
// Each component counts what it does in a Stats struct (MemoryStats,
// ReaderStats; streams.StoreStats, streams.PublisherStats) for the
// metrics package.
package history
