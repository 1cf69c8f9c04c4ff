// Package appstream hands the app messages of a server.Server (SENDs to
// server.Config.AppPrefix, "/app/" by default) to a backend through a
// Redis Stream.
//
// Handler is a server.AppHandler: each message is one XADD
//
//	XADD <stream> MAXLEN ~ <maxlen> * destination <d> principal <p>
//	    session <s> instance <i> id <message id> headers <JSON object> body <body>
//
// and the server sends the client's RECEIPT only after Redis answered.
// The backend reads the stream with a consumer group (XREADGROUP, then
// XACK once a message is dealt with): a backend that restarts resumes at
// what it had not acknowledged, and several workers in one group share
// the messages. Parse turns an entry back into a Message.
//
// MAXLEN ~ bounds what the stream holds when no backend reads it; an
// entry trimmed before a backend read it is lost, which is the price of
// a bounded Redis.
package appstream
