package outcome

// Why the public listener refused a connection at accept, before any
// HTTP (stompgate_listener_refused_total{reason}, admission.Listener).
const (
	// ListenerRate: the bucket of accepted connections is empty
	// (-accept-rate, -accept-burst).
	ListenerRate = "accept_rate"
	// ListenerPending: -max-pending-conns connections are accepted and
	// have not sent their request's headers yet.
	ListenerPending = "pending"
	// ListenerPendingAddr: the client's address holds
	// -max-pending-conns-per-addr of them.
	ListenerPendingAddr = "pending_addr"
	// ListenerRateAddr: the client's address passed its
	// -accept-rate-per-addr connections in this second.
	ListenerRateAddr = "accept_rate_addr"
)

// ListenerReasons returns every listener refusal reason. The slice is a
// fresh copy.
func ListenerReasons() []string {
	return []string{ListenerRate, ListenerPending, ListenerPendingAddr, ListenerRateAddr}
}
