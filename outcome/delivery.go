package outcome

// The paths by which a message reaches the server before it is written to
// its subscribers (stompgate_delivery_latency_seconds{path}).
const (
	// DeliveryLocal: a SEND read from a session on this instance; its
	// latency counts from the end of the read that brought it.
	DeliveryLocal = "local"
	// DeliveryRelay: a message from another instance (or, for a
	// destination that keeps a history in Redis, from this one) read from
	// Redis by the relay; its latency counts from that read.
	DeliveryRelay = "relay"
	// DeliveryAPI: a message the program published (the server API,
	// server.Server.Publish); its latency counts from the call.
	DeliveryAPI = "api"
)

// DeliveryPaths returns every delivery path. The slice is a fresh copy.
func DeliveryPaths() []string { return []string{DeliveryLocal, DeliveryRelay, DeliveryAPI} }
