package outcome

// WebSocket close codes a Close may carry (RFC 6455 section 7.4.1), named
// here so the leaf needs no WebSocket package; the server converts them.
const (
	codeNormal          = 1000
	codeGoingAway       = 1001
	codePolicyViolation = 1008
	codeInternalError   = 1011
	codeTryAgainLater   = 1013
)

// Close says why a session ended. Each reason is defined once, below, with
// everything that depends on it: the bounded label it is counted and
// logged under (stompgate_sessions_closed_total{reason}), the WebSocket
// close code the client sees, and the ERROR frame's message header for a
// reason the server explains. The session, metrics and logs all read these
// values; adding a reason is one line here.
//
// A Close is immutable; compare reasons by pointer.
type Close struct {
	label   string
	code    int
	message string
}

// String returns the label, a short snake_case word from a fixed set.
func (r *Close) String() string { return r.label }

// Code is the WebSocket close code sent with the close; zero for a reason
// that ends the connection without a close handshake (the peer is gone
// or not reading).
func (r *Close) Code() int { return r.code }

// Message is the ERROR frame's message header sent before the close, or
// empty when the reason sends no ERROR or the message depends on the
// frame (protocol errors, a stage's rejection).
func (r *Close) Message() string { return r.message }

// closes holds every reason in definition order.
var closes []*Close

func defineClose(label string, code int, message string) *Close {
	r := &Close{label: label, code: code, message: message}
	closes = append(closes, r)
	return r
}

// Closes returns every Close, in the order defined, so that a metrics
// adapter can resolve a counter for each once. The slice is a fresh copy.
func Closes() []*Close { return append([]*Close(nil), closes...) }

// The close reasons.
var (
	// CloseNormal: DISCONNECT, or a clean close by the client.
	CloseNormal = defineClose("normal", codeNormal, "")
	// CloseProtocolError: an ERROR for a frame the server could not
	// accept, or a stage rejected it (permission); the message names the
	// problem.
	CloseProtocolError = defineClose("protocol_error", codePolicyViolation, "")
	// CloseSlowConsumer: the outbound queue was full; queued frames are
	// discarded and the close follows without an ERROR.
	CloseSlowConsumer = defineClose("slow_consumer", codePolicyViolation, "slow consumer")
	// CloseHeartBeat: the client was silent past the negotiated
	// heart-beat interval plus tolerance; the connection is dropped.
	CloseHeartBeat = defineClose("heartbeat_timeout", 0, "")
	// CloseConnectTimeout: no CONNECT in time after the upgrade.
	CloseConnectTimeout = defineClose("connect_timeout", codePolicyViolation, "CONNECT timeout")
	// CloseAuthFailed: missing, invalid or expired credentials.
	CloseAuthFailed = defineClose("auth_failed", codePolicyViolation, "")
	// CloseRateLimitAbuse: the session kept flooding past its limit, or
	// its principal is banned for doing so.
	CloseRateLimitAbuse = defineClose("rate_limit_abuse", codePolicyViolation, "rate limit exceeded")
	// CloseShutdown: the server is shutting down or draining.
	CloseShutdown = defineClose("shutdown", codeGoingAway, "server shutting down")
	// ClosePanic: a panic was recovered while serving the session.
	ClosePanic = defineClose("panic", codeInternalError, "internal error")
	// CloseClientGone: the connection broke without a clean close.
	CloseClientGone = defineClose("client_gone", 0, "")
	// CloseTokenExpired: the credentials the session was opened with
	// expired and no newer ones arrived.
	CloseTokenExpired = defineClose("token_expired", codePolicyViolation, "token expired")
	// CloseControlFlood: more control frames (SUBSCRIBE, UNSUBSCRIBE,
	// BEGIN, COMMIT, ABORT, frames asking for a receipt) than the
	// session's budget.
	CloseControlFlood = defineClose("control_flood", codePolicyViolation, "too many control frames")
	// ClosePingTimeout: a session that negotiated no STOMP heart-beat did
	// not answer a WebSocket ping within the timeout; the connection is
	// dropped.
	ClosePingTimeout = defineClose("ping_timeout", 0, "")
	// CloseSessionCap: a stage refused CONNECT because the principal
	// already holds its maximum number of sessions.
	CloseSessionCap = defineClose("session_cap", codePolicyViolation, "too many sessions")
	// CloseBackendError: the app handler did not take an app message.
	CloseBackendError = defineClose("backend_error", codeTryAgainLater, "backend unavailable")
	// CloseAppBacklog: the app handler refused an app message because the
	// backend has not taken earlier ones (a backlog bound, AppBound*).
	CloseAppBacklog = defineClose("app_backlog", codeTryAgainLater, "backend busy")
	// CloseDisconnected: the program ended the session (the server's
	// Disconnect, the HTTP API's disconnect).
	CloseDisconnected = defineClose("disconnected", codePolicyViolation, "disconnected by the server")
	// CloseOutboundBudget: the server's outbound queues together went
	// over their total byte budget and this session held one of the
	// largest; its queue is discarded before the ERROR.
	CloseOutboundBudget = defineClose("outbound_budget", codePolicyViolation, "slow consumer")
)

// CloseSubscriberCap: a SUBSCRIBE found its destination already holding
// the most subscribers its rule allows. STOMP 1.2 has the server close
// the connection after an ERROR frame, so the session ends; the
// client's other subscriptions go with it.
var CloseSubscriberCap = defineClose("subscriber_cap", codePolicyViolation, "subscriber limit reached")
