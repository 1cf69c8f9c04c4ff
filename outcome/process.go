package outcome

// Why the server changed the processors it runs on
// (stompgate_procs_changes_total{reason}).
const (
	// ProcsLoad: a tick's CPU time filled the processors in use.
	ProcsLoad = "load"
	// ProcsQueue: between ticks, goroutines waited for a processor.
	ProcsQueue = "queue"
	// ProcsLower: processors given up, at the start (down to one) or
	// after a quiet spell (one fewer).
	ProcsLower = "lower"
)

// ProcsReasons returns every processor change reason. The slice is a
// fresh copy.
func ProcsReasons() []string { return []string{ProcsLoad, ProcsQueue, ProcsLower} }

// The bounds of the public HTTP server that close a connection
// (stompgate_http_timeouts_total{kind}).
const (
	// HTTPTimeoutIdle: a keep-alive connection waited longer than the
	// idle timeout for its next request.
	HTTPTimeoutIdle = "idle"
	// HTTPTimeoutRead: a request's headers or body did not arrive within
	// the read timeouts (a slow or stalled client).
	HTTPTimeoutRead = "read"
)

// HTTPTimeouts returns every HTTP timeout. The slice is a fresh copy.
func HTTPTimeouts() []string { return []string{HTTPTimeoutIdle, HTTPTimeoutRead} }
