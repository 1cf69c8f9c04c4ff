// Package api is the server API: HTTP and JSON, versioned under /api/v1/,
// through which a backend publishes to clients, ends their sessions and
// looks them up. cmd/wsserver serves it on the admin listener when
// -api-key is set.
//
// Every request carries "Authorization: Bearer <key>"; any other gets 401
// (the key is compared in constant time). Errors are JSON objects
// {"error": "...", "field": "..."} where field names the offending
// request field ("request" for a body that is not a JSON object).
//
//	POST /api/v1/publish     {"destination": "/topic/game.7", "body": "...",
//	                          "headers": {"kind": "state"}}
//	                         or "body_base64" for a binary body.
//	                         202 {"id": "<message id>", "delivered": <local subscribers>}
//	                         Delivered on every instance through the relay;
//	                         no client limit applies; at most
//	                         Config.MaxHeaders headers (default 64), each
//	                         name:value at most 4096 bytes.
//	POST /api/v1/disconnect  {"principal": "alice"} or {"session": "<id>"},
//	                         optional "reason" (the ERROR frame's body).
//	                         200 {"disconnected": <sessions ended here>};
//	                         with Config.Others, the other instances are
//	                         asked to end theirs (500 with the error and
//	                         the local count when they cannot be reached).
//	GET  /api/v1/sessions[?principal=alice][&destination=/topic/game.7]
//	                         [&limit=100][&cursor=<next_cursor>]
//	                         200 {"instance": "<host>:<port>",
//	                         "sessions": [{"id", "principal",
//	                         "remote_address", "connected_since",
//	                         "received", "passed", "dropped"}],
//	                         "next_cursor": "...", "matched": n, "open": n}
//
// The session listing is for support staff: the connected sessions of
// this instance, oldest first, optionally those of one principal and
// those subscribed to one destination (as the broker knows it: a topic,
// or a user queue as published to, /user/alice/queue/chat). A page holds
// limit sessions (default DefaultPageSize, 100; at most
// Config.MaxPageSize, default DefaultMaxPageSize, 500, or 400 naming
// limit), so no call makes the server encode every session at once.
// next_cursor, absent on the last page, is opaque: it names the last
// session's place in the order (its connection time and id, which never
// change), so a session that ends between two pages is skipped and none
// is listed twice; one that connects meanwhile comes on a later page.
// matched counts this instance's sessions that match the filters, open
// every session it holds (connected or not). The listing and the counts
// are this instance's only, named by instance: ask each instance's admin
// listener for a deployment's whole picture. A call looks at every
// session it may select (all of them without filters) and keeps a page's
// worth in memory; no registry lock is held while the answer is built.
package api
