package server

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// App destinations. A SEND whose destination starts with Config.AppPrefix
// is not broadcast: once the interceptor chain passed it (and, inside a
// transaction, at COMMIT), it is handed to Config.AppHandler, the
// program's backend, on the session's reader goroutine, bounded by
// Config.AppTimeout.
//
// The contract with the client:
//   - The RECEIPT of such a SEND, when it asked for one, is sent only
//     after the handler returned nil: a client that waits for it knows
//     the backend has the message.
//   - When the handler returns an error (or does not return within
//     AppTimeout: its context is done), the message is lost; the error is
//     counted (BackendObserver.AppHandled "error") and logged, and the
//     session ends with ERROR "backend unavailable" (outcome.CloseBackendError),
//     not a silent drop: STOMP has no negative receipt, and a client that
//     sent without a receipt would otherwise never learn of it. It
//     reconnects and resends.
//   - When the handler refuses the message because the backend has not
//     taken earlier ones (it returns an *AppBacklogError), the session
//     ends with ERROR "backend busy" (outcome.CloseAppBacklog), counted by the
//     bound that was reached (AppBacklogObserver). The message is not
//     kept: refusing is how a bounded backlog stays bounded without
//     dropping messages that were already acknowledged.
//   - Without a handler, the session ends with ERROR "no backend
//     configured" (a protocol error of kind "no_backend").
//
// Waiting on the reader goroutine keeps one session's app messages in the
// order it sent them and makes a slow backend slow down only the sessions
// that write to it: their reads stop, as with a full outbound queue.

// DefaultAppPrefix is the prefix of app destinations (Spring's
// convention for @MessageMapping).
const DefaultAppPrefix = "/app/"

// DefaultAppTimeout bounds one AppHandler call. A Redis XADD takes well
// under a millisecond; 2 s covers a failover pause, and holds a session's
// reader no longer than a client would wait for a RECEIPT.
const DefaultAppTimeout = 2 * time.Second

// AppMessage is a SEND to an app destination, as the chain passed it.
type AppMessage struct {
	// ID is the message id the server gave it (a MESSAGE's message-id).
	ID string
	// Destination is the SEND's destination, prefix included.
	Destination string
	// Principal is the sender's principal name; anonymous sessions have
	// the generated "anonymous-<session>".
	Principal string
	// Session is the sender's session id (the CONNECTED session header).
	Session string
	// RemoteIP is the sender's address (see Config.ClientIP); the zero
	// Addr when the server could not tell.
	RemoteIP netip.Addr
	// Headers are the SEND's user headers (not destination, receipt,
	// transaction, content-length nor token). Do not modify them.
	Headers []stompframe.Header
	// Body is the SEND's body. Do not modify it; copy what is kept after
	// HandleApp returns.
	Body []byte
	// Trace is the W3C traceparent of a SEND the server traces (see
	// Tracer), for the backend to continue the trace; empty for the
	// others, and always when Config.Tracer is nil.
	Trace string
}

// AppHandler receives the app messages of every session. appstream.Handler
// appends them to a Redis Stream.
type AppHandler interface {
	// HandleApp takes m. It is called on the sender's reader goroutine,
	// from many sessions at once, with a context that ends after
	// Config.AppTimeout. A nil error is the promise that the backend has
	// the message: the client's RECEIPT follows. An error ends the
	// session with ERROR "backend unavailable".
	HandleApp(ctx context.Context, m AppMessage) error
}

// AppHandlerFunc adapts a function to AppHandler.
type AppHandlerFunc func(ctx context.Context, m AppMessage) error

// HandleApp calls f.
func (f AppHandlerFunc) HandleApp(ctx context.Context, m AppMessage) error { return f(ctx, m) }

// BackendObserver is an Observer that also counts the backend features;
// the server checks its Observer for it. metrics.Metrics implements it.
type BackendObserver interface {
	// AppHandled reports one AppHandler call: "ok", "error" or
	// "no_backend".
	AppHandled(result string)
	// UserDelivered reports a message delivered to one session through a
	// user destination.
	UserDelivered()
}

// AppBacklogError is the error an AppHandler returns when it refuses a
// message because the backend has not yet taken earlier ones and taking
// this one would pass Bound, one of outcome's AppBound constants. The server
// ends the session with ERROR "backend busy" (outcome.CloseAppBacklog) and counts
// the refusal by Bound.
type AppBacklogError struct {
	Bound string
}

func (e *AppBacklogError) Error() string {
	return "server: app backlog over its " + e.Bound + " bound"
}

// AppBacklogObserver is an Observer that also counts app messages refused
// by an AppBacklogError; the server checks its Observer for it.
// metrics.Metrics implements it.
type AppBacklogObserver interface {
	// AppRefused reports one refusal by the bound that was reached.
	AppRefused(bound string)
}

// isApp reports whether dest is an app destination.
func (s *Server) isApp(dest string) bool {
	return strings.HasPrefix(dest, s.cfg.AppPrefix)
}

func (s *Server) appHandled(result string) {
	if s.backend != nil {
		s.backend.AppHandled(result)
	}
}

// handleApp hands m to the AppHandler and reports whether the session is
// ending because it could not.
func (s *session) handleApp(m *broker.Message, receipt string) (end bool) {
	h := s.srv.cfg.AppHandler
	if h == nil {
		s.srv.appHandled(outcome.AppNoBackend)
		s.protocolError(frameError{kind: outcome.KindNoBackend, message: "no backend configured",
			detail: fmt.Sprintf("SEND to %q needs a backend and this server has none", m.Destination)}, receipt)
		return true
	}
	// The backend may take up to AppTimeout: the writers held back must
	// not wait for it.
	s.flushBatch()
	ctx, cancel := context.WithTimeout(context.Background(), s.srv.cfg.AppTimeout)
	defer cancel()
	err := h.HandleApp(ctx, AppMessage{
		ID:          m.ID,
		Destination: m.Destination,
		Principal:   s.principalName(),
		Session:     s.st.ID,
		RemoteIP:    s.st.RemoteIP,
		Headers:     m.Headers(),
		Body:        m.Body(),
		Trace:       m.Trace,
	})
	if be := (*AppBacklogError)(nil); errors.As(err, &be) {
		s.srv.appHandled(outcome.AppRefused)
		if s.srv.backlog != nil {
			s.srv.backlog.AppRefused(be.Bound)
		}
		s.fail(ending{reason: outcome.CloseAppBacklog, kind: "app_backlog", receipt: receipt,
			headers: []stompframe.Header{{Name: "bound", Value: be.Bound}},
			detail:  "the backend has not yet taken earlier messages (" + be.Bound + " bound reached); this one was not taken: send it again later"})
		return true
	}
	if err != nil {
		s.srv.appHandled(outcome.AppError)
		s.srv.cfg.Logger.Warn("app message not taken by the backend", "session", s.st.ID, "destination", m.Destination, "err", err)
		s.fail(ending{reason: outcome.CloseBackendError, kind: "app_handler", receipt: receipt,
			detail: "the backend did not take the message; reconnect and send it again"})
		return true
	}
	s.srv.appHandled(outcome.AppOK)
	return false
}
