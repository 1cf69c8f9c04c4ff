// Package presence keeps who is in which destination: the members of
// rooms that opt in (a policy rule's presence: true), by principal, on
// every instance, with joins and leaves a client can follow without a gap.
//
// # Model
//
// A member is a principal subscribed to the destination by at least one
// session. The server calls Tracker.Join for each such subscription and
// the function it returns when the subscription ends (UNSUBSCRIBE, or the
// session's end however it ends). A principal's second session, a second
// browser tab, only counts: the member's session count goes up and nobody
// is told. When its last session ends the member stays for Config.Grace,
// so that a page reload or a network switch is neither a leave nor a join;
// after that it leaves.
//
// An instance's share of the members is written to a Store by one writer
// goroutine, member by member in the order they changed. A member whose
// state changes back before its turn (a quick leave and join, with no grace
// at all) costs nothing: the writer writes what should be stored, not
// every step. The Store numbers each destination's joins and leaves from
// 1, with no gap, across every instance: a principal joins when its first
// share appears anywhere and leaves when its last share goes.
//
// MemoryStore keeps one instance's members. presence/redisstore keeps
// every instance's in Redis, and removes the members of an instance that
// dies when its lease ends.
//
// # Watching
//
// Tracker.Watch, which serves a SUBSCRIBE to /presence/<destination>,
// sends the destination's snapshot first, then deltas. A delta gathers
// the events of Config.Batch (250 ms in wsserver), so a room's mass
// reconnect costs each watcher a few frames, not one per member; a delta
// carries at most Config.MaxMembers events. The events of a destination
// are encoded once for all its watchers.
//
// Every frame is a MESSAGE with content-type application/json. A
// snapshot:
//
//	{"type":"snapshot","destination":"/topic/room.42","seq":17,"count":3,
//	 "members":[{"principal":"alice","sessions":2,"info":"Alice"},
//	            {"principal":"bob","sessions":1}]}
//
// seq is the number of the last event the snapshot includes; count counts
// every member, and members lists at most Config.MaxMembers of them,
// sorted by principal (count > len(members) says the list was cut).
// sessions is the member's session count on every instance when the
// snapshot was read; later deltas do not update it. info is the
// presence-info header of one of the member's SUBSCRIBEs (bounded bytes of
// UTF-8), absent when empty. A delta:
//
//	{"type":"delta","destination":"/topic/room.42","seq":19,
//	 "events":[{"seq":18,"op":"join","principal":"carol","info":"Carol"},
//	           {"seq":19,"op":"leave","principal":"bob"}]}
//
// Its events continue the seq of the frame before with no gap; its seq is
// its last event's. A client applies events in order onto the snapshot.
// When the tracker finds an event missing (a message between instances
// lost while Redis was unreachable) it sends every watcher a fresh
// snapshot instead: a client that gets a snapshot replaces what it had.
//
// # Bounds
//
// What a watcher costs is bounded by Config.MaxMembers (members listed,
// events per frame) and the frame rate by Config.Batch; what a session may
// watch and the info it may give are bounded by the server
// (server.PresenceConfig). Every store call is bounded by Config.Timeout.
// Rooms are opted in by the policy, so a client cannot make the tracker
// keep a destination that no rule names.
package presence
