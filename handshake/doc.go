// Package handshake limits the rate of WebSocket handshakes per client IP,
// with exactly the decisions of nginx's limit_req with `burst=N nodelay`, so
// that the server and an nginx in front of it, fed the same numbers, accept
// and refuse the same requests.
//
// # Stores
//
// The state lives in Redis (RedisStore: each decision atomic in a Lua
// script, timed by Redis' own clock, shared by every instance; concurrent
// decisions share round trips and scripts, see RedisStore) or in process memory
// (MemoryStore: sharded, bounded by LRU eviction like an nginx zone). The
// Limiter puts them together: Redis first, and on a Redis error or timeout
// the in-process store (fail open, the default) or a refusal (fail closed),
// until Redis answers again. With no Redis configured the MemoryStore is the
// only store. Middleware applies the Limiter in front of the WebSocket
// upgrade and answers 429 Too Many Requests over the limit.
//
// # Keys
//
// A client is its key (clientip.Key): an IPv4 address as itself, an IPv6
// address by its first MiddlewareConfig.IPv6Prefix bits (/64 by default,
// since one host holds a whole /64 and can use any address in it). The
// Middleware passes the key on in the request's context (clientip.KeyFrom),
// so the session cap behind it and the bans the sessions earn count the
// same client; the rendered nginx configuration keys its limits alike.
//
// # The algorithm
//
// nginx's limit_req module (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html,
// directives limit_req_zone and limit_req; "the limitation is done using the
// leaky bucket method") keeps, per key, the time of the last accepted
// request (last_ms) and an excess, and computes in integers:
//
//   - rate is requests per second × 1000: rate=3r/s is 3000, rate=30r/m is
//     500 (limit_req_zone's rate parameter, stored ×1000);
//   - time is whole milliseconds: now_ms = sec×1000 + msec; from Redis TIME,
//     which gives seconds and microseconds, now_ms = sec×1000 +
//     floor(usec/1000) (truncated, never rounded);
//   - excess is in thousandths of a request; burst (limit_req's burst
//     parameter) is compared ×1000.
//
// For each request on a known key:
//
//	elapsed_ms = now_ms − last_ms                      (negative counts as 0, see below)
//	excess     = stored_excess − rate × elapsed_ms / 1000 + 1000   (integer division)
//	if excess < 0 { excess = 0 }                       (the clamp comes after adding the request)
//	refused   if excess > burst × 1000                 (equality passes)
//	accepted: store excess and last_ms = now_ms
//
// A refused request changes nothing: neither the excess nor last_ms. A key
// without state (new, expired or evicted) is accepted and created with
// excess 0, so from rest burst+1 requests pass back to back: 6 for 3r/s
// burst=5.
//
// This is ngx_http_limit_req_lookup in src/http/modules/ngx_http_limit_req_module.c
// (`excess = lr->excess - ctx->rate * ngx_abs(ms) / 1000 + 1000`, then
// `if (excess < 0) excess = 0`, refusal when `excess > limit->burst`) for a
// location with a single limit_req and nodelay, where the decision and the
// accounting happen in the same lookup.
//
// One deliberate difference: nginx takes the absolute value of a negative
// elapsed time (its clock went back), which refills the bucket by the size
// of the step. Here a negative elapsed counts as 0, so a clock step (for
// example a Redis failover to a replica whose clock is behind) never grants
// requests. Forward time is treated identically.
//
// For example, at 3r/s burst=5 from rest: six requests at t=0 leave excess
// 5000; a seventh at t=0 would make 6000 > 5000 and is refused. At t=333ms
// the bucket has drained 3000×333/1000 = 999, so a request would make
// 5000 − 999 + 1000 = 5001 > 5000: refused. At t=334ms it has drained 1002,
// making 4998: accepted. Steady traffic at 3/s passes forever (gaps of
// 333, 333 and 334ms drain 999, 999 and 1002: what three requests add);
// steady traffic at 4/s fills the bucket and then passes only as fast as it
// drains, 3 requests in 4.
//
// # Retry-After
//
// For a refused request, Result.RetryAfter is the time until the same
// request would pass: the smallest t with rate×t/1000 ≥ stored_excess +
// 1000 − burst×1000, measured from last_ms, that is
// last_ms + ceil((stored_excess + 1000 − burst×1000) × 1000 / rate) − now_ms,
// and at least 1ms. Middleware rounds it up to whole seconds for the
// Retry-After header, so a Retry-After is never 0.
//
// # Numeric precision
//
// Go computes in int64; the Lua script in Redis computes in float64 (Lua
// 5.1 numbers), which represents every integer up to 2^53 exactly. Limit
// bounds Rate by MaxRate (1e9) and Burst by MaxBurst (1e6), and the elapsed
// time is capped at the point where the bucket has fully drained (beyond it
// every result is 0, so the cap changes nothing). Every intermediate value
// then stays below about 10^12, millisecond timestamps (about 1.8×10^12
// today) are exact, and the divisions, done with math.floor and math.ceil
// on exact operands, give the same integers as Go's.
//
// # Keys in Redis
//
// The state of zone Z for key K is the hash "stompgate:hs:{K}:Z" (fields e
// and l: excess and last_ms) and a ban of K is the string "stompgate:ban:{K}",
// with the configurable "stompgate:" prefix. Both carry the hash tag {K}, so
// on Redis Cluster they live in the same slot and one script reads both. The
// hash expires (PEXPIRE) one second after it would have drained to rest,
// about (burst+1)/rate, so idle keys vanish without changing any decision.
package handshake
