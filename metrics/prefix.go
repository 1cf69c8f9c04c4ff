package metrics

import "github.com/stompgate/stompgate/outcome"

// PrefixLimit says which per-client limit refused a client keyed by its
// IPv6 prefix; it is the limit label of
// stompgate_ipv6_prefix_refusals_total. The zero value is
// PrefixLimitOther.
type PrefixLimit uint8

// The limits that key IPv6 clients by prefix. A value outside this list
// is counted as "other".
const (
	// PrefixLimitOther is a limit this package does not name.
	PrefixLimitOther PrefixLimit = iota
	// PrefixLimitHandshake: the handshake rate (and the bans it checks).
	PrefixLimitHandshake
	// PrefixLimitSessionCap: the sessions one client holds open.
	PrefixLimitSessionCap
)

var prefixLimitLabels = append([]string{labelOther}, outcome.PrefixLimits()...)

// String returns the label value l is counted under.
func (l PrefixLimit) String() string { return labelOf(prefixLimitLabels, l) }

func (m *Metrics) buildPrefix(b *builder) {
	refusals := b.counterVec("stompgate_ipv6_prefix_refusals_total",
		"Handshakes refused by a per-client limit whose client is an IPv6 address keyed by its prefix (-ipv6-prefix), by limit; also counted in stompgate_handshakes_total.", "limit")
	m.prefixRefusals = resolveAll(prefixLimitLabels, refusals.WithLabelValues)
}

// IPv6PrefixRefused counts a handshake refused by limit for a client keyed
// by its IPv6 prefix (stompgate_ipv6_prefix_refusals_total{limit}).
func (m *Metrics) IPv6PrefixRefused(limit PrefixLimit) {
	if m == nil {
		return
	}
	m.prefixRefusals[known(prefixLimitLabels, limit)].Inc()
}
