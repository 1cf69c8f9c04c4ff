package outcome

// The stores that answer a limiter's decision (the handshake limiter's
// and the session caps'), each the store label of their metrics.
const (
	// StoreRedis: the shared state in Redis decided.
	StoreRedis = "redis"
	// StoreMemory: this instance's own state decided (no Redis, or Redis
	// unreachable and fail-open).
	StoreMemory = "memory"
	// StoreNone: Redis was unreachable and the limiter fails closed, so
	// the request was refused undecided.
	StoreNone = "none"
	// StoreLocal: no store was asked; the handshake limiter refused the
	// request itself, shedding it (see the Local* reasons).
	StoreLocal = "local"
)

// LimiterStores returns the stores the handshake limiter's decisions are
// counted by (stompgate_handshake_limiter_decision_seconds{store}). The
// slice is a fresh copy.
func LimiterStores() []string { return []string{StoreRedis, StoreMemory, StoreLocal} }

// Why the handshake limiter answered without Redis although Redis is not
// judged failing (stompgate_handshake_limiter_local_decisions_total{reason}).
const (
	// LocalRefused: refused without asking, because Redis refused the key
	// within the last Retry-After it gave.
	LocalRefused = "refused"
	// LocalInFlight: refused without asking, because the key already has
	// its most decisions on their way to Redis.
	LocalInFlight = "in_flight"
	// LocalQueueFull: the Redis queue was full.
	LocalQueueFull = "queue_full"
	// LocalQueueWait: the decision waited its longest without being sent.
	LocalQueueWait = "queue_wait"
	// LocalTimeout: the decision's round trip failed (timed out, mostly)
	// but Redis is not judged failing.
	LocalTimeout = "timeout"
)

// LocalReasons returns every local decision reason. The slice is a fresh
// copy.
func LocalReasons() []string {
	return []string{LocalRefused, LocalInFlight, LocalQueueFull, LocalQueueWait, LocalTimeout}
}

// The results of the PING that confirms a limiter's Redis timeouts in a
// row (stompgate_handshake_limiter_confirmations_total{result},
// stompgate_session_cap_confirmations_total{result}).
const (
	// ConfirmFailed: the PING failed too; fallback mode was entered.
	ConfirmFailed = "failed"
	// ConfirmAnswered: Redis answered; no fallback.
	ConfirmAnswered = "answered"
)

// The scopes of a session cap: what its keys name
// (stompgate_session_cap_leases{scope} and others).
const (
	// CapScopeIP: sessions per client IP, checked at the handshake.
	CapScopeIP = "ip"
	// CapScopePrincipal: sessions per authenticated principal, checked at
	// CONNECT.
	CapScopePrincipal = "principal"
	// CapScopeDestination: subscriptions per destination, checked at
	// SUBSCRIBE against the destination rule's subscriber cap.
	CapScopeDestination = "destination"
)

// CapScopes returns every cap scope. The slice is a fresh copy.
func CapScopes() []string { return []string{CapScopeIP, CapScopePrincipal, CapScopeDestination} }

// The per-client limits that key an IPv6 client by its prefix
// (stompgate_ipv6_prefix_refusals_total{limit}).
const (
	// PrefixLimitHandshake: the handshake rate (and the bans it checks).
	PrefixLimitHandshake = "handshake"
	// PrefixLimitSessionCap: the sessions one client holds open.
	PrefixLimitSessionCap = "session_cap"
)

// PrefixLimits returns every limit that keys IPv6 clients by prefix. The
// slice is a fresh copy.
func PrefixLimits() []string { return []string{PrefixLimitHandshake, PrefixLimitSessionCap} }
