// Package reconnect bans reconnect loops: a client address or a verified
// principal that completes more than Limit CONNECTs within Window (by
// default 15 a minute, EMQX's flapping detection) is banned for BanFor
// (5 minutes), across every instance sharing Redis, per instance without
// it.
//
// # Model
//
// Each key (scope "address": clientip.Key of the client, an IPv4 address
// or an IPv6 prefix; scope "principal": a verified principal's name) has
// a fixed window that starts at its first counted CONNECT and lasts
// Window; the first CONNECT after it starts the next one. A CONNECT that
// makes the window's count Limit+1 is over: the key is banned and that
// CONNECT refused (see Stage). A window that starts at the key's own
// first CONNECT, rather than on a clock's minute, means a client that
// connects exactly Limit times per Window is never over; a client can
// still fit up to 2×Limit CONNECTs into one Window-long stretch across
// the end of a window and the start of the next, which a loop (it does
// not stop at Limit) does not exploit. Counting is O(1) per CONNECT with
// no per-CONNECT timestamps, as the session limiter's fixed window.
//
// The ban is not this package's: Stage records it through an
// interceptor.Banner, the handshake limiter, which checks an address's
// ban at the handshake, before the WebSocket upgrade and before any
// token is verified (429, Retry-After the rest of the ban), and a
// principal's at CONNECT (interceptor.PrincipalStage with Bans: ERROR
// "banned"), so that a banned loop costs the server no signature check
// and no session.
//
// Only CONNECTs the stages before Stage accepted are counted: a token
// that fails, a banned principal or a full session cap ends the session
// before Stage sees it. A principal is counted only when a token named
// it: without a verified token a session is anonymous, named after its
// own id, so a client cannot fill someone else's count by claiming their
// name.
//
// # Across instances: one script in Redis
//
// With a RedisStore, a key's window is a hash
//
//	<prefix>rc:{<scope>:<name>}   fields s (start, Redis ms) and n (count)
//
// wholly inside a hash tag, so it works on Redis Cluster. One Lua script
// (count.lua) reads the start, starts a new window or increments the
// count, and sets the hash to expire when the window ends, all atomically
// and by Redis' own clock (TIME), so instances never disagree about
// time and an idle key costs Redis nothing. Each count is one round trip
// bounded by RedisConfig.Timeout (50ms).
//
// # When Redis is unreachable
//
// The Counter counts every CONNECT in its MemoryStore as well, a bounded
// map (MemoryConfig.MaxKeys, 100,000 keys by default) with lazy expiry,
// so that it holds at least this instance's share of each key's window.
// It judges Redis failing as the handshake limiter and the session caps
// do (internal/fallback): a refused or reset connection or an error
// reply at once, timeouts only when TimeoutsToFail in a row are
// confirmed by a failed PING. In fallback mode it counts in memory only,
// so each instance bans the loops it sees itself; a background probe
// leaves fallback mode when Redis answers again. The bans themselves are
// the Banner's: the handshake limiter keeps them in memory and in Redis.
//
// Without a RedisStore the MemoryStore is the only store: the embedded
// default of a single instance, with nothing to set up.
package reconnect
