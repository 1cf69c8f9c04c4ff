// Package sessioncap caps how many sessions one key holds open at once:
// per client IP at the WebSocket handshake (Middleware, 429 with
// Retry-After) and per authenticated principal at CONNECT (PrincipalStage,
// ERROR "too many sessions"), across every server instance.
//
// # Model
//
// A cap is nginx's limit_conn model (ngx_http_limit_conn_module): at most
// Max sessions of a key are open at once, and the next one is refused
// until one of them ends. A slot is taken when the session starts and
// given back when it ends, whatever ends it: the Middleware hands the
// release to server.OnSessionEnd, the PrincipalStage releases in
// SessionClosed (interceptor.Closer).
//
// # Across instances: leases in Redis
//
// With a RedisStore, a key's slots are a sorted set, one member per open
// session (a lease id unique to the instance), scored by the lease's
// expiry in Redis' own clock (TIME), so instances never disagree about
// time. One Lua script acquires atomically: it drops expired leases
// (ZREMRANGEBYSCORE), counts the rest (ZCARD) and adds the new one (ZADD)
// only below Max. Releasing is ZREM. Each set's key is
//
//	<prefix>cap:{<scope>:<name>}
//
// wholly inside a hash tag, so it works on Redis Cluster; every command
// touches one key. A member is the lease's birth time in Redis ms (13
// digits), the instance's lease id and the owning session's id, joined by
// '|': byte order is age order across instances.
//
// # Displacement
//
// A cap that refuses the newest session lets whoever holds a leaked
// token open Max times lock its owner out. With PrincipalConfig.Displace
// the newest session is admitted instead and the oldest ends: the acquire
// script drops the oldest members (the first in byte order) to make room
// and returns them; the stage asks PrincipalConfig.Disconnect to end their
// owners, here or on the instance that holds them. Deciding alone (no
// Redis, or in fallback), the stage hands the slot of its own oldest
// session of the principal to the new one.
//
// A lease lives LeaseTTL (DefaultLeaseTTL, 15 s) unless renewed. The
// RedisStore's renewer goroutine extends every lease this instance holds,
// in one pipeline, every LeaseTTL/3. An instance that dies stops renewing,
// so its slots come back at most LeaseTTL after its last renewal: a dead
// instance holds a slot for at most LeaseTTL. Renewal also writes back a
// lease Redis no longer has (Redis restarted empty, or this instance could
// not reach it for longer than LeaseTTL): the session is open, so it
// counts again, even if that puts its key above Max until sessions end.
//
// # When Redis is unreachable
//
// The Limiter keeps an in-process count of this instance's own sessions
// per key, MemoryStore, beside Redis. It enters fallback mode only on
// evidence that Redis itself is failing, judged as the handshake limiter
// judges it (internal/fallback's Health): a refused or reset connection
// or an error reply at once; timeouts only when TimeoutsToFail calls in a
// row timed out and a PING bounded by ConfirmTimeout (1 s) failed too. In
// fallback mode, with FailClosed it refuses (Decision.Store StoreNone);
// otherwise it decides on the in-process count, so each instance enforces
// the cap on the sessions it holds. An acquire that timed out while Redis
// is not judged failing (a server so busy that it reads the answer late
// looks the same) is decided on the in-process count whatever FailClosed
// says (Decision.Local): refusing every new session because this server
// is busy would let one flooding client lock out every other. A background
// probe leaves fallback mode when Redis answers again. Sessions admitted in
// fallback mode are not in Redis: until they end, the shared count misses
// them.
//
// Without a RedisStore, MemoryStore is the only store: the embedded default
// of a single instance, with nothing to set up.
package sessioncap
