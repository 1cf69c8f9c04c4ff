// Package tictactoe is an example game backend for stompgate: two players
// per game, moves validated by the backend, never by the clients.
//
// Clients speak STOMP to wsserver only:
//
//	SUBSCRIBE /user/queue/tictactoe       private answers (joined, errors)
//	SUBSCRIBE /topic/game.<id>            the game's state after each change
//	SEND      /app/tictactoe.join  {"game": "<id>"}
//	SEND      /app/tictactoe.move  {"game": "<id>", "cell": 0..8}
//
// wsserver appends the SENDs to the app stream (-app-stream); Backend
// reads it with a consumer group, so a restarted backend resumes where it
// stopped, and answers through wsserver's server API (APIClient): the
// state to /topic/game.<id> for everyone watching, private messages to
// /user/<principal>/queue/tictactoe for one player's sessions.
//
// The games live in the backend's memory: run one worker per stream, or
// keep the state in Redis to share the group between workers.
//
// PageHandler serves a browser client (page/: HTML, script and style,
// embedded, no build step) that plays these frames with @stomp/stompjs,
// wsserver's own copy. It passes the page's WebSocket and that script on
// to wsserver, keeping the Host the browser used, so that the page and
// its WebSocket share one origin and wsserver's Origin check accepts them
// without -allowed-origins. The command (cmd/tictactoe) serves it on
// -web-addr: two tabs on it, joined to the same game, are its players.
package tictactoe
