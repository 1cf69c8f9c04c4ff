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
//	GET  /api/v1/sessions?principal=alice
//	                         200 {"sessions": [{"id", "principal",
//	                         "remote_address", "connected_since",
//	                         "received", "passed", "dropped"}]} of this instance.
package api
