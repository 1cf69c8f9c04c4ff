// Package nginx renders the nginx configuration that stands in front of
// stompgate, from the same policy.Policy the wsserver's handshake limiter
// enforces, so the limits in front and behind can never drift apart.
//
// nginx limits what it can see at almost no cost: the HTTP API and the
// WebSocket handshake, per client IP, with ngx_http_limit_req_module. After
// the upgrade the connection is an opaque tunnel, so the STOMP message
// limit stays in the server.
//
// # What Render produces
//
// By default Render returns http-context directives for
// /etc/nginx/conf.d/stompgate.conf, which the distribution's nginx.conf
// includes inside http{}: zones, maps, upstreams and the server blocks.
// Everything it defines at http level is named stompgate_ or after a
// policy zone, and it repeats none of the directives nginx.conf sets there
// (default_type, server_tokens, error_log), so it sits beside the
// distribution's own configuration. Config.Full wraps the same directives
// in a standalone nginx.conf (main context, events{} and http{}) for
// `nginx -c`, with the user, pid, error log and worker settings.
//
// The shipped stompgate.conf is Render(policy.Default(), Config{}) and
// stompgate-full.conf the same with Full; a test fails when either
// differs, and `go test ./nginx -run TestRenderGolden -update` rewrites
// them.
//
//   - The WebSocket endpoint is Config.WSPath, the wsserver's -ws-path.
//     Every policy route to the ws upstream is rendered there, whatever
//     path the policy names, because the wsserver serves one endpoint and
//     applies its handshake zone there: with -ws-path /stomp the default
//     policy's GET /ws limit lands on /stomp, and /ws is no longer a
//     WebSocket location.
//   - Routes to the api upstream, with their zones, are rendered only when
//     Config.APIUpstreams names servers; otherwise the file's header
//     comment lists them as not rendered.
//   - Everything else goes to the wsserver unlimited: its demo page,
//     /healthz and /readyz. /metrics is answered 404, since behind the
//     balancer it would be one instance's numbers, picked at random.
//   - With Config.TLSCert and TLSKey, the server listens with TLS 1.2 and
//     1.3 on TLSListen (443), and the plain HTTP server on Listen answers
//     every request with a 308 redirect to the same URL over HTTPS.
//   - A map of $remote_addr to $stompgate_client_key, the key of every
//     limit: an IPv4 address as itself, an IPv6 address by its first
//     Config.IPv6Prefix bits (/64), as the wsserver keys it.
//   - One limit_req_zone per policy zone, keyed by $stompgate_client_key, or
//     for a zone limited to one method by a map of $request_method that is
//     empty for other methods: nginx does not count requests with an empty
//     key, and limit_req is not allowed inside if.
//   - One location per route path: "= /path" for fixed paths and an
//     anchored regular expression for paths with {name} segments, each with
//     limit_req zone=<name> burst=<n> nodelay. nodelay serves a burst at
//     once instead of spacing it out at the rate, which would hold
//     WebSocket handshakes open for seconds.
//   - limit_req_status 429 and limit_req_log_level warn. A refused request
//     is sent (error_page) to a named location that answers
//     {"error":"too_many_requests","retry_after":N} as application/json
//     with Retry-After: N. N is ceil(1000/Rate) seconds, the time in which
//     the zone earns one request back, at least 1; a location limited by
//     several zones announces the largest. The header's value comes from a
//     map of $limit_req_status (nginx 1.17.6 or later) that is empty unless
//     the request was REJECTED, so no other response carries it.
//   - A zone with max_connections also gets a limit_conn_zone named
//     <name>-conn (a policy zone name has no "-", so the two never meet)
//     and limit_conn <name>-conn N on its locations, with
//     limit_conn_status 429: the (N+1)th connection one client IP holds
//     open is refused with Retry-After policy.CapRetryAfter, from a map of
//     $limit_conn_status. For a WebSocket a connection is a session, so
//     nginx refuses with the same status and the same number as the
//     wsserver's own session cap.
//   - The access log writes "$request_method $uri $server_protocol", not
//     $request: a browser cannot set headers on a WebSocket handshake, so
//     its token travels as ?access_token=, and the query never reaches
//     the log. (nginx's error log, at warn, still quotes the request line
//     when a limit refuses one; keep it where tokens may be.)
//   - The WebSocket location proxies to upstream stompgate_ws (least_conn,
//     since sessions are long-lived) with HTTP/1.1, the Upgrade and
//     Connection headers, Host, X-Real-IP, X-Forwarded-For and
//     X-Forwarded-Proto, read and send timeouts above the STOMP heart-beat
//     interval, and no buffering. Plain requests to the wsserver and API
//     locations use keep-alive upstream connections.
//
// # Limits of the front
//
// The key is cut from the address nginx sees. Behind a load balancer,
// configure ngx_http_realip_module so that $remote_addr is the client's.
// Fixed paths match exactly: "/rooms/" is not "/rooms", and a route for
// GET does not count HEAD. The wsserver enforces the handshake limit itself
// as well, so a request that slips past nginx, or a deployment without it,
// is still held to the same numbers.
package nginx
