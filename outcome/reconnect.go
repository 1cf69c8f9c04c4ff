package outcome

// The scopes of a reconnect-loop ban: what its counted key names
// (stompgate_reconnect_bans_total{scope}).
const (
	// ReconnectScopeAddress: CONNECTs counted per client address (an IPv4
	// address or an IPv6 prefix); the ban is the handshake limiter's, so
	// the next handshake is refused with 429 before any token is checked.
	ReconnectScopeAddress = "address"
	// ReconnectScopePrincipal: CONNECTs counted per verified principal,
	// from any address; the ban is checked at CONNECT (ERROR "banned").
	ReconnectScopePrincipal = "principal"
)

// ReconnectScopes returns every reconnect-loop scope. The slice is a
// fresh copy.
func ReconnectScopes() []string { return []string{ReconnectScopeAddress, ReconnectScopePrincipal} }

// ReconnectStores returns the stores a reconnect count is counted by
// (stompgate_reconnect_connects_total{store}): Redis, or this instance's
// memory. The slice is a fresh copy.
func ReconnectStores() []string { return []string{StoreRedis, StoreMemory} }
