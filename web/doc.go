// Package web serves stompgate's demo chat page: a browser client over
// @stomp/stompjs that joins a room, chats, and floods the server on demand
// so that a person can watch the per-session limiter drop frames.
//
// Handler serves three things, all from the binary (go:embed; no npm, no
// CDN, no build step at run time):
//
//	GET /                           the page (index.html.tmpl, rendered once)
//	GET /static/<file>              its script, the reconnect helper, style
//	                                sheet and the vendored stomp.umd.min.js
//	                                (see static/stompjs/VERSION)
//	GET /api/sessions/{id}/counts   {"received":N,"passed":N,"dropped":N}
//
// # What the page shows
//
// The server drops excess SEND frames silently (no ERROR, no RECEIPT), so a
// client cannot see its own frames being dropped. The page therefore polls
// the counts endpoint once per second with the session id from the
// CONNECTED frame's session header and shows the server's view: frames
// received, passed and dropped. A "flood" button sends 100 SEND frames per
// second from the tab.
//
// # Reconnecting and the handshake limit
//
// The page reconnects with static/reconnect.js, a helper for any
// @stomp/stompjs application (the README shows how to use it): it plugs
// into stompjs' beforeConnect and waits, before each retry, a time drawn
// uniformly below a ceiling that doubles from 1 s to 30 s (full jitter),
// or the server's Retry-After plus less than a second when one is known.
// A browser cannot read the HTTP status of a refused WebSocket handshake:
// the close event says 1006 whether the server answered 429, 503 or
// nothing. After a handshake that failed before CONNECTED, the helper
// sends a plain GET to the WebSocket URL. The handshake limiter runs
// before the upgrade, so it answers that GET like a handshake: 429 with
// Retry-After when the client is over the limit (426 Upgrade Required
// otherwise). A refused CONNECT's ERROR frame may carry a retry-after
// header (seconds), read the same way. The page shows the wait as a
// countdown. The probe is itself a counted request: under the limit it
// takes one slot of the client's handshake budget. It is sent only after a
// failed handshake, so a healthy client never pays for it.
//
// # Caching
//
// The page links every static file as /static/<file>?v=<hash of its
// content>. A request whose v matches the current content is cacheable for
// a year (immutable); any other static request, and the page itself, must
// be revalidated (Cache-Control: no-cache, with an ETag). The counts are
// never cached.
//
// # Exposure
//
// The counts endpoint answers for any open session whose id is known, to
// anyone: the ids are not secret (they are in every CONNECTED frame) and
// frame counts reveal nothing of the messages. Mount the handler only
// where the demo page is wanted.
package web
