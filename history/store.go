package history

import (
	"context"
	"time"
)

// Defaults of a destination's history and of a recovery.
const (
	// DefaultKeep is how many messages a destination keeps when its
	// Retention leaves Keep zero: a busy chat room's last few minutes,
	// and what one recovery may replay by default (DefaultMaxRecovery),
	// so that a client away for as long as the history lasts can come
	// back whole.
	DefaultKeep = 1000
	// DefaultFor is how long a message is kept when its Retention leaves
	// For zero: longer than a phone takes to change networks or a
	// rolling deploy takes to move a session, short enough that a room
	// of a 20-minute game holds only its own game.
	DefaultFor = 10 * time.Minute
	// DefaultMaxRecovery is how many messages one recovery may replay:
	// one history's worth (DefaultKeep). A replay is sent through the
	// session's bounded outbound queue like any other output; a client
	// that missed more is better served reloading from its backend.
	DefaultMaxRecovery = 1000
	// MaxKeep bounds Retention.Keep: a history is for catching up, not
	// an archive, and one Tail may carry this many entries.
	MaxKeep = 100_000
	// MaxFor bounds Retention.For, for the same reason.
	MaxFor = 24 * time.Hour
)

// Retention is how much history one destination keeps; the policy's
// per-rule `history: {keep: N, for: D}`. The zero value keeps
// DefaultKeep messages for DefaultFor.
type Retention struct {
	// Keep is how many of the newest messages are kept. Zero means
	// DefaultKeep; negative or above MaxKeep is an error.
	Keep int
	// For is how long a message is kept. Zero means DefaultFor;
	// negative or above MaxFor is an error.
	For time.Duration
}

// WithDefaults returns r with its zero fields filled.
func (r Retention) WithDefaults() Retention {
	if r.Keep == 0 {
		r.Keep = DefaultKeep
	}
	if r.For == 0 {
		r.For = DefaultFor
	}
	return r
}

// Validate reports a Retention the stores refuse, naming the field.
func (r Retention) Validate() error {
	if r.Keep < 0 || r.Keep > MaxKeep {
		return configErrorf("Retention.Keep %d is outside 0..%d", r.Keep, MaxKeep)
	}
	if r.For < 0 || r.For > MaxFor {
		return configErrorf("Retention.For %v is outside 0..%v", r.For, MaxFor)
	}
	return nil
}

// Store holds the histories of destinations. MemoryStore and
// streams.Store (Redis Streams, in package history/streams) implement it;
// Reader reads through it.
type Store interface {
	// Append adds data as dest's next message, kept as r says, and
	// returns its position. The store owns data afterwards.
	Append(ctx context.Context, dest string, data []byte, r Retention) (Position, error)
	// Tail returns dest's snapshot with at most the limit newest
	// retained entries; r's For decides which entries are too old to
	// count as retained.
	Tail(ctx context.Context, dest string, limit int, r Retention) (Snapshot, error)
}
