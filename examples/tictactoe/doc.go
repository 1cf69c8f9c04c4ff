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
package tictactoe
