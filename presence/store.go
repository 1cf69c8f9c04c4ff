package presence

import "context"

// Member is one principal present in a destination, as a snapshot lists
// it.
type Member struct {
	// Principal is the member's principal name.
	Principal string `json:"principal"`
	// Sessions is how many sessions of the principal are in the
	// destination, on every instance, when the snapshot was read.
	Sessions int `json:"sessions"`
	// Info is the client info one of its sessions gave, at most
	// Config.MaxInfoBytes of UTF-8; may be empty.
	Info string `json:"info,omitempty"`
}

// Snapshot is the membership of one destination at one sequence number.
type Snapshot struct {
	// Seq is the sequence number of the last join or leave the snapshot
	// includes; the next event of the destination has Seq+1.
	Seq uint64
	// Count is the number of members, all of them.
	Count int
	// Members lists at most the limit Snapshot was asked for, sorted by
	// principal; len(Members) < Count when the rest were left out.
	Members []Member
}

// Op is what an Event says happened.
type Op string

// The two events.
const (
	// OpJoin is a principal that was not a member becoming one.
	OpJoin Op = "join"
	// OpLeave is a member whose last session ended, after the grace
	// period.
	OpLeave Op = "leave"
	// OpSync is no change but a store's word that the destination has
	// reached Seq: a tracker that has not heard of Seq missed events,
	// and sends its watchers a fresh snapshot. Watchers never see it.
	OpSync Op = "sync"
)

// Event is one join or leave of a destination.
type Event struct {
	// Seq numbers the destination's events from 1, with no gap.
	Seq uint64 `json:"seq"`
	// Op is OpJoin or OpLeave.
	Op Op `json:"op"`
	// Principal is who joined or left.
	Principal string `json:"principal"`
	// Info is a joining member's client info; empty for a leave.
	Info string `json:"info,omitempty"`
}

// Store holds the membership of destinations, this instance's share of it
// written by Set, and numbers its joins and leaves. MemoryStore holds it
// for one instance; an adapter can hold it for several (a Redis one in
// presence/redisstore). Its methods must be safe for concurrent use and
// bound their own waits with ctx.
type Store interface {
	// Set records that this instance holds sessions sessions of
	// principal in dest, with info; 0 removes the principal's share.
	// The store emits OpJoin when the principal had no share on any
	// instance before, OpLeave when the last share went.
	Set(ctx context.Context, dest, principal string, sessions int, info string) error
	// Snapshot reads dest's membership, listing at most limit members.
	Snapshot(ctx context.Context, dest string, limit int) (Snapshot, error)
	// Attach gives the store the function its events go to, in Seq
	// order per destination; the Tracker calls it once, from New.
	Attach(deliver func(dest string, events []Event))
	// Watched tells the store that this instance has watchers of dest
	// (on true) or no longer has (on false), so that it keeps dest's
	// membership current, for example by removing the members of an
	// instance that died.
	Watched(dest string, on bool)
}
