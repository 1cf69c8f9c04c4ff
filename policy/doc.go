// Package policy defines stompgate's per-client request limits once, for
// both places that enforce them: the nginx configuration rendered by package
// nginx (limit_req in front of the servers) and the wsserver's handshake
// limiter (in Redis, shared by every instance, for deployments without nginx
// or requests that reach an instance directly). Because both read the same
// Policy, the limits in front and behind can never drift apart.
//
// # Model
//
// A Zone is nginx's limit_req model (ngx_http_limit_req_module,
// limit_req_zone and limit_req with nodelay): a leaky bucket per key,
// counted in thousandths of a request. For each request nginx computes
//
//	excess = max(0, previous excess − Rate × elapsed ms / 1000) + 1000
//
// and refuses the request (429 Too Many Requests) when excess exceeds
// Burst×1000; a refused request leaves the stored excess unchanged. A new
// key starts at 0, so Burst+1 requests pass at once, and after that one per
// Rate.Interval. With the default ws_handshake zone (3r/s, burst 5), six
// rapid handshakes pass and the seventh is refused; a third of a second
// later one more passes.
//
// Rate uses nginx's unit (requests per second × 1000) so that the number in
// a policy, in the rendered limit_req_zone and in the server's limiter is
// one integer, with no rounding between them. ParseRate refuses rates nginx
// would round.
//
// # Session caps
//
// A Zone's MaxConnections is nginx's limit_conn model
// (ngx_http_limit_conn_module, limit_conn_zone and limit_conn): at most N
// connections of one key are open at once; the (N+1)th is refused with 429
// and Retry-After CapRetryAfter until one of them closes. For a WebSocket
// a connection is a session, so the cap bounds what one address can make
// the servers hold, and with the per-session message limit L what it can
// make them deliver: at most N × L messages per window. The wsserver
// enforces the cap of its handshake zone too, across every instance, so a
// deployment without nginx is held to the same number.
//
// # Destination rules
//
// A policy may list rules for STOMP destinations (Rule): a pattern and
// what the server does for destinations that match it — a per-session
// send limit of its own and the commands it counts, read-only
// destinations, latest-value delivery, a subscriber cap, a per-principal
// limit across instances. The first rule that matches a destination
// applies; a destination no rule matches keeps the server's defaults.
// Patterns are those of the principal's permissions
// (interceptor.MatchDestination), so one pattern language serves both.
// NewRules compiles the rules into a Rules that finds a destination's
// rule without allocating; the wsserver swaps a new one in on SIGHUP. The
// rules are STOMP-level: nginx never sees a frame, and nothing of them
// is rendered there.
//
// # Policy files
//
// Parse and Load read YAML; the compiled-in Default is the embedded
// default.yaml, whose comments explain its numbers. Parsing is strict and
// errors name the zone and field, so a typo in a deployed policy stops the
// server at start-up instead of silently removing a limit.
package policy
