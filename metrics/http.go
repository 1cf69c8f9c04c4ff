package metrics

import "github.com/stompgate/stompgate/outcome"

// HTTPTimeout says which bound of the public HTTP server closed a
// connection; it is the kind label of stompgate_http_timeouts_total. The
// zero value is HTTPTimeoutOther.
type HTTPTimeout uint8

// The HTTP timeouts. A value outside this list is counted as "other".
const (
	// HTTPTimeoutOther is a timeout this package does not name.
	HTTPTimeoutOther HTTPTimeout = iota
	// HTTPTimeoutIdle: a keep-alive connection waited longer than the
	// idle timeout for its next request.
	HTTPTimeoutIdle
	// HTTPTimeoutRead: a request's headers or body did not arrive within
	// the read timeouts (a slow or stalled client).
	HTTPTimeoutRead
)

var httpTimeoutLabels = append([]string{labelOther}, outcome.HTTPTimeouts()...)

// String returns the label value k is counted under.
func (k HTTPTimeout) String() string { return labelOf(httpTimeoutLabels, k) }

func (m *Metrics) buildHTTP(b *builder) {
	timeouts := b.counterVec("stompgate_http_timeouts_total",
		"Plain HTTP connections the server closed because a timeout ran out, by kind.", "kind")
	m.httpTimeouts = resolveAll(httpTimeoutLabels, timeouts.WithLabelValues)
}

// HTTPTimedOut counts a connection closed by an HTTP server timeout
// (stompgate_http_timeouts_total{kind}).
func (m *Metrics) HTTPTimedOut(kind HTTPTimeout) {
	if m == nil {
		return
	}
	m.httpTimeouts[known(httpTimeoutLabels, kind)].Inc()
}
