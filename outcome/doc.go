// Package outcome holds every bounded outcome the server, its adapters and
// metrics speak of, each defined once: why a session closed (with its
// WebSocket close code and ERROR text), how a handshake ended, why a stage
// dropped or rejected a frame, the kinds of protocol error, what became of
// an app message, and the short label sets the metrics adapter counts by.
//
// It is a leaf: it imports the standard library only, so that the server,
// the interceptor stages, the Redis and HTTP adapters and metrics can all
// import it without importing each other. Adding a reason is one line in
// the file that defines its set; metrics resolves a counter for every
// value of each list once, at construction.
package outcome
