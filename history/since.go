package history

// Entry is one retained message: its offset and the bytes stored for it
// (for the Redis store, the signed payload the relay publishes; for the
// memory store, whatever the caller appended). Data is shared with the
// store and with other readers: it must not be modified.
type Entry struct {
	Offset uint64
	Data   []byte
}

// Snapshot is what a store holds for one destination at one moment: the
// epoch, the range of retained offsets, and the newest retained entries
// (all of them, or the last limit asked of Tail).
type Snapshot struct {
	// Epoch is the history's epoch; empty when the destination has none
	// (nothing appended, or its history expired or was evicted).
	Epoch string
	// First is the oldest retained offset; Last+1 when none is retained.
	First uint64
	// Last is the latest offset of Epoch; 0 when none was assigned.
	Last uint64
	// Entries are the newest retained entries, ascending and
	// consecutive, ending at Last (or empty).
	Entries []Entry
}

// Result is what Since decides for one subscription.
type Result struct {
	// Entries are the messages to replay, ascending and consecutive.
	Entries []Entry
	// Recovered reports that Entries are every message from the start
	// asked for up to the snapshot's Last: no gap. A StartNext is always
	// recovered.
	Recovered bool
	// Reason says why not, when Recovered is false.
	Reason Reason
	// Next is the position live delivery must continue from: the
	// snapshot's Last+1, in its epoch.
	Next Position
}

// Since decides, from snap, what a subscription that asked for start
// gets: at most max messages to replay (max below 1 means
// DefaultMaxRecovery), all or nothing. It never returns part of a gap:
// when the messages asked for are not all in snap, or more than max, it
// returns none with Recovered false and the Reason. StartLast and
// StartFirst on an empty history are recovered with nothing to replay.
//
// snap must hold at least the newest max entries retained (Tail with a
// limit of max or more); a snapshot holding fewer is read as trimmed.
func Since(snap Snapshot, start Start, max int) Result {
	if max < 1 {
		max = DefaultMaxRecovery
	}
	if snap.First == 0 {
		snap.First = 1 // the zero Snapshot: no history
	}
	res := Result{Next: Position{Offset: snap.Last + 1, Epoch: snap.Epoch}}
	var from uint64
	reason := ReasonNone
	switch start.Kind {
	case StartNext:
		res.Recovered = true
		return res
	case StartLast:
		if snap.Last == 0 || snap.First > snap.Last {
			res.Recovered = true
			return res
		}
		from = snap.Last
	case StartFirst:
		from = snap.First
	case StartAt:
		if start.Epoch == "" {
			reason = ReasonNoEpoch
		} else if start.Epoch != snap.Epoch {
			res.Reason = ReasonEpochChanged
			return res
		}
		from = max64(start.Offset, 1)
		switch {
		case from > snap.Last+1:
			res.Reason = ReasonAhead
			return res
		case from < snap.First:
			res.Reason = ReasonTrimmed
			return res
		}
	}
	if from == snap.Last+1 {
		res.Recovered, res.Reason = reason == ReasonNone, reason
		return res
	}
	if snap.Last-from+1 > uint64(max) {
		res.Reason = ReasonTooMany
		return res
	}
	es := snap.Entries
	if len(es) == 0 || es[0].Offset > from || es[len(es)-1].Offset != snap.Last ||
		es[len(es)-1].Offset-es[0].Offset+1 != uint64(len(es)) {
		// The snapshot does not hold what it claims: never hand out a
		// run with a hole in it.
		res.Reason = ReasonTrimmed
		return res
	}
	res.Entries = es[from-es[0].Offset:]
	res.Recovered, res.Reason = reason == ReasonNone, reason
	return res
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
