// Package principallimit holds each authenticated principal to a number
// of frames (SEND by default) per fixed window in total: all its sessions,
// on every instance sharing a Redis. The per-session limit alone lets one
// account publish its session cap times the session limit (10 × 20/s by
// default), spread over as many instances.
//
// # Model
//
// A fixed window per principal and rule, counted in Redis by one atomic
// Lua script (charge.lua) on one hash per principal and rule,
//
//	<prefix>pl:{<principal>}:<rule>
//
// whose window index comes from Redis TIME (no skew between instances) and
// which lives as long as the window. Fixed window, as the per-session
// limit's default, for the same reasons: O(1) state, and at a window edge
// at most 2 × limit pass within one window's length, harmless against the
// limit's margin over real use.
//
// # The pre-check: most frames cost no round trip
//
// Each instance keeps an entry per principal and rule publishing in the
// current window, and decides in memory first:
//
//   - Optimistic frames. The first O frames of a principal in a window on
//     this instance (Config.Optimistic; a tenth of the limit by default,
//     6 of 60) pass at once, unreported. A user below O per window on an
//     instance — every real user at 1.3 frames/s — never waits for, or
//     causes, a round trip.
//   - Charges. The frame after them asks Redis, carrying the O
//     unreported frames: Redis adds those unconditionally (they were
//     delivered) and the asking frame only if the count stays within the
//     limit. The answer also says how long the window has left, which
//     aligns this instance's window to Redis'. The next O frames pass
//     optimistically again, and so on: a principal at the limit costs
//     about limit/(O+1) round trips per window per instance.
//   - Over. Once Redis answers that the count is at or above the limit,
//     every frame of the principal on this instance is dropped in memory
//     until the window ends: an abuser's excess never reaches Redis,
//     save the one asking frame of each instance's last charge.
//
// A charge is made with the principal's entry locked, so the principal's
// other frames on this instance wait for the answer (at most the
// RedisStore's Timeout, 50 ms) instead of guessing; other principals never
// wait for it.
//
// # Overshoot bound
//
// Frames charged by asking pass only if the count stays within the limit.
// An instance's optimistic frames are at most O per window; they are
// either charged before its first charge that finds the principal over
// (after which it passes nothing more in the window) or never charged.
// So across K instances at most limit + K × O frames pass per window of
// Redis' clock (plus the fixed window's own edge effect): 60 + 2 × 6 = 72
// on two instances with the defaults. Setting Optimistic to 1 makes the
// bound limit + K at the cost of a round trip per frame up to the limit.
//
// # Bounded memory
//
// Entries are keyed by a keyed 64-bit hash of rule and principal, so an
// entry's size does not grow with a name, and there are at most
// Config.MaxPrincipals of them (100,000, about 10 MB). An entry whose
// window ended is dropped lazily, when its shard needs room; with none
// expired, an arbitrary one is evicted (counted): its principal starts a
// window afresh on this instance, so up to O more of its frames go
// uncounted once, while its count in Redis stays.
//
// # Who is limited
//
// Only principals the interceptor's PrincipalStage verified from a token.
// An anonymous session gets a fresh generated name, which no other session
// shares: the per-session limit already holds it, and counting it here
// would cost an entry per session for nothing.
//
// # Per-destination limits
//
// StageConfig.LimitFor maps a frame's destination to a rule with its own
// limit and window (the policy file's destination rules); a principal's
// frames are counted apart under each rule. Nil, or a destination no rule
// matches, is the global limit.
//
// # When Redis is unreachable
//
// The Limiter falls back as the handshake limiter and the session caps
// do, judged by internal/fallback's Health: a refused or reset connection
// or an error reply at once; timeouts only after RedisConfig.
// TimeoutsToFail in a row and a failed confirming PING. In fallback mode
// each instance holds every principal to the limit on its own frames
// (SourceMemory): a principal spread over K instances may then publish K
// times the limit, never more. One charge per RetryInterval tries Redis
// again, and a background probe ends fallback mode when it answers; the
// mode is logged when it starts and when it ends, and is a metric. A charge
// that failed while Redis is not judged failing (a timeout on a busy
// server) decides the rest of that principal's window on this instance's
// count, so a slow Redis costs at most one timed-out round trip per
// principal per window. Without a RedisStore, the instance's own count is
// the only store: the embedded default of a single instance.
package principallimit
