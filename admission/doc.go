// Package admission decides whether this instance takes one more
// session, and when a client it refuses should come back.
//
// # Admission
//
// A Gate holds three bounds, each off until configured:
//
//   - a session cap (Config.MaxSessions): the sessions this instance
//     holds at once, a slot taken by an admitting decision and given back
//     exactly once when the session ends (Middleware does it through
//     server.OnSessionEnd) or when the request never became a session;
//   - an instance-wide token bucket of new sessions (Config.Rate per
//     second, Config.Burst at once), with time passed in (AdmitAt(now));
//   - a memory guard: above Config.MemoryThreshold of Config.MemoryLimit
//     new sessions are refused, live ones untouched. The figure is read
//     through runtime/metrics (RuntimeMemory) at most every
//     Config.MemoryInterval and reused in between, so a storm of
//     handshakes does not read it per request.
//
// The checks run in the order memory, sessions, rate, and the token and
// the slot are taken only when all pass: a refusal spends nothing, so a
// storm of refused clients does not keep the bucket empty.
//
// Refusals are 503 Service Unavailable (the instance is busy, whoever
// asks), where the per-client limits answer 429 (this client sent too
// much). The Middleware looks at the Gate before those limits run
// (MiddlewareConfig.Checks): in a storm most handshakes are refused
// there, and each refusal then costs the instance no Redis round trip
// of the handshake limit or the session cap. The token and slot are
// taken only after those limits let the request through, so a client
// refused for its own excess never holds the instance's tokens, not
// even while its refusal is decided: a flood from one address cannot
// keep the bucket empty for others. A request that passed the look
// and its checks finds the bucket emptied meanwhile at most as often
// as requests run their checks at once, and is refused then.
//
// The Gate counts the most sessions it admitted within any PeakWindow
// (100 ms): State.PeakAdmitted, which the bucket bounds by Rate ×
// PeakWindow + Burst. That is where a storm's arrivals are held to the
// rate; a client sees its CONNECTED later, after the WebSocket upgrade
// and the CONNECT's own checks, and sessions admitted apart may reach it
// together when the instance's cores are busy.
//
// # Before HTTP
//
// A refusal of the Middleware comes after net/http has accepted the
// connection, started its goroutine and read and parsed the request: in
// a storm of ten thousand first attempts within a second, that work is
// what the sessions already open wait behind. A Listener wraps the
// public listener and bounds it before net/http: the connections handed
// on per second (a token bucket of its own, ListenerConfig.Rate), and
// those handed on that have not reached a handler yet
// (ListenerConfig.MaxPending, with a share per client address and a
// timeout past which the oldest are closed to make room). A connection
// past a bound is answered at accept with a prebuilt 503, its
// Retry-After drawn from the Gate's schedule, and closed: an accept, a
// write and a close, no goroutine and nothing parsed. On Linux the
// kernel hands a connection to Accept only once its first bytes arrived
// (TCP_DEFER_ACCEPT), so the 503 answers a request the client has sent.
//
// # Retries that spread
//
// When an instance dies, its N clients reconnect to the ones left within
// the same second. If every refused client were told the same
// Retry-After, all N would come back together, again and again. The
// Retry-After of a refusal is therefore drawn at random, and from a
// window that grows with the pressure, so that refused clients come back
// at about the admission rate r.
//
// The Gate keeps a schedule of the next Config.RetryAfterMax seconds:
// for each whole second, how many refused clients were told to come back
// in it. Each second has room for the tokens the bucket gains in it (r,
// or DefaultSpreadRate without a rate). The backlog B is the clients
// told to come back and not yet due. A refusal at now draws its
// Retry-After as follows:
//
//	lo     = max(1 s, time until the bucket's next token), whole seconds
//	window = [lo, hi], hi the first second by which the capacity from lo
//	         holds 1.25 × (B + 1), bounded by RetryAfterMax
//	pick   = uniformly among the free places of the window (each place
//	         left in each second equally likely), and count it there
//
// The window grows as refusals add to B and shrinks as their seconds
// pass. When no place is left within RetryAfterMax (a backlog of more
// than RetryAfterMax × r) the pick is uniform over [lo, RetryAfterMax]
// (full jitter over the longest window), still counted.
//
// The model: N clients refused together, each retrying once at its
// Retry-After plus a uniform sub-second spread of its own. No second is
// promised more retries than the bucket refills in it, so retries arrive
// at no more than r per second, and the last is sent at most 1.25 × N/r
// + lo away: everyone is admitted within 2 × N/r. Within a second the
// arrivals are the clients' own uniform spread of about r of them: in
// 100 ms, r/10 on average, with the noise of a binomial count (standard
// deviation about √(r/10)) that the bucket's burst (a tenth of a second
// of r by default) absorbs. The simulation in TestStormModel measures it (10,000
// clients at 500/s: all back in 25 s, at most 529 retries in any second).
// A Retry-After is whole seconds (RFC 9110 section 10.2.3), never 0, and
// never below the time the bucket needs for its next token.
//
// The Gate is safe for concurrent use: one mutex guards the count, the
// bucket, the memory figure and the schedule, each decision O(RetryAfterMax
// in seconds).
package admission
