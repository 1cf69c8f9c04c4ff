// Package server serves STOMP 1.0, 1.1 and 1.2 sessions over WebSocket
// (RFC 6455, in internal/wsconn), with the subprotocols v12.stomp, v11.stomp and
// v10.stomp; a client that offers none is served as 1.2.
//
// Each connection is one session. The HTTP handler goroutine that accepted
// it reads and handles frames: stompframe decodes them, the interceptor
// chain passes, drops or rejects them, and the broker fans SEND frames out
// as MESSAGE frames. Outbound frames go through a bounded per-session queue
// (outbox.go, with its own lock, taken after the session's) drained by a
// writer goroutine that exists only while the queue is not
// empty and packs several frames into one WebSocket message. A session
// whose queue fills is closed as a slow consumer (close 1008) without ever
// blocking the broker or other sessions. All queues together are bounded
// too (Config.OutboundTotalBytes): past it, the largest backlogs are
// closed first. Listener caps each socket's kernel send buffer, which
// would otherwise hold megabytes for a peer that does not read.
// What a publisher's frames deliver is written by its own reader before
// it waits (broker.Batch); a session held back so is written by
// whichever publisher delivering to it flushes first (handoff.go). An
// Observer that is also a DeliveryObserver is told, for every MESSAGE
// written, the time since its arrival and the part spent queued.
//
// Protocol behaviour (STOMP 1.2 specification, sections in quotes):
//   - "Connecting": CONNECT or STOMP is answered with CONNECTED carrying
//     version, heart-beat, server, session and user-name. The version is
//     the highest common one ("Protocol Negotiation"); no common version
//     gets an ERROR with a version header. A CONNECT must arrive within
//     ConnectTimeout of the upgrade.
//   - "Heart-beating": negotiated both ways; the server sends an EOL when
//     it wrote nothing for the negotiated interval and closes a client that
//     is silent for the negotiated interval plus HeartBeatTolerance.
//   - "Header" requirements: SEND and SUBSCRIBE need destination,
//     SUBSCRIBE and UNSUBSCRIBE need id (1.1+), ACK and NACK need id (1.2)
//     or message-id (+subscription in 1.1), transactions must be open.
//     Violations, unknown commands, frames before CONNECT, bad escapes and
//     oversize frames are answered with ERROR (message header, text body,
//     receipt-id when the frame had a receipt) and a close ("ERROR").
//   - "RECEIPT": every frame with a receipt header that was handled gets a
//     RECEIPT; DISCONNECT's receipt is sent before the close. A SEND the
//     session limiter drops gets none.
//   - "SUBSCRIBE ack Header": auto, client and client-individual are
//     accepted. Delivery is at-most-once: a message is handed to the
//     subscriber's queue once and never redelivered; ACK and NACK are
//     validated and otherwise have no effect.
//   - Destinations are topics: a SEND to any destination is delivered to
//     every subscription on exactly that destination, "/topic/..." by
//     convention.
//   - User destinations (Spring's convention, see UserPrefix): SUBSCRIBE
//     to "/user/queue/<name>" receives what is published to
//     "/user/<principal>/queue/<name>", on every instance. A client SEND
//     to "/user/..." is refused (ERROR "permission denied") unless its
//     principal's send patterns name "/user/" literally; what a client
//     sends there carries SenderHeader, set by the server.
//   - App destinations (Config.AppPrefix, "/app/"): a SEND there goes to
//     Config.AppHandler, the program's backend, instead of subscribers;
//     its RECEIPT follows the handler's success (see AppHandler).
//   - Destination options (Config.Destinations, read at SUBSCRIBE):
//     latest-value delivery, where a subscriber holds at most one waiting
//     MESSAGE of the subscription and a newer one replaces it (latest.go),
//     and a cap on a destination's subscribers, over which a SUBSCRIBE
//     gets ERROR "subscriber limit reached" and, as "ERROR" requires, a
//     close; Config.SubscriberSlots makes the cap hold across instances.
//   - Presence (Config.Presence, presence.go): a SUBSCRIBE to a
//     destination that keeps presence makes its principal a member, with
//     the presence-info header; a SUBSCRIBE to PresencePrefix +
//     destination watches the members as JSON MESSAGEs (package
//     presence). Watches per session and info bytes are bounded.
//
// A program publishes with Server.Publish, lists a principal's sessions
// with Server.SessionsOf and ends sessions with Server.Disconnect.
//   - "BEGIN"/"COMMIT"/"ABORT": SENDs in a transaction are held until
//     COMMIT (bounded by MaxTransactionFrames) and discarded on ABORT.
//
// Shutdown closes every session itself: http.Server.Shutdown does not
// touch hijacked connections.
package server
