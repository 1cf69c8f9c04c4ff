package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

func (m *Metrics) buildDelivery(b *builder) {
	delivered := b.counterVec("stompgate_messages_delivered_total",
		"MESSAGE frames queued to subscribers, one per subscriber, by configured destination prefix "+
			`("other" when none matches).`, "destination_prefix")
	m.delivered = make([]prometheus.Counter, len(m.prefixes)+1)
	for i, p := range m.prefixes {
		m.delivered[i] = delivered.WithLabelValues(p)
	}
	m.delivered[len(m.prefixes)] = delivered.WithLabelValues(labelOther)
	m.slowConsumer = b.counter("stompgate_slow_consumer_disconnects_total",
		"Sessions closed because their outbound queue was full.")
}

// Delivered counts one MESSAGE sent to destination and queued to n
// subscribers (stompgate_messages_delivered_total{destination_prefix} grows
// by n). The label is the longest configured prefix destination starts
// with, else "other"; the destination itself never becomes a label value.
// n <= 0 counts nothing.
func (m *Metrics) Delivered(destination string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.delivered[m.prefixIndex(destination)].Add(float64(n))
}

// prefixIndex returns the index in m.delivered for destination: a linear
// scan over at most MaxDestinationPrefixes prefixes, longest first.
func (m *Metrics) prefixIndex(destination string) int {
	for i, p := range m.prefixes {
		if strings.HasPrefix(destination, p) {
			return i
		}
	}
	return len(m.prefixes)
}

// SlowConsumerDisconnect counts a session closed because its outbound queue
// was full (stompgate_slow_consumer_disconnects_total). The close itself is
// counted by SessionClosed(CloseSlowConsumer).
func (m *Metrics) SlowConsumerDisconnect() {
	if m == nil {
		return
	}
	m.slowConsumer.Inc()
}
