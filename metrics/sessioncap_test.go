package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestSessionCaps(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.SessionCapAcquired(CapScopeIP)
	m.SessionCapAcquired(CapScopeIP)
	m.SessionCapAcquired(CapScopePrincipal)
	m.SessionCapReleased(CapScopeIP)
	m.SessionCapAcquired(CapScope(42))
	m.SessionCapStoreError()
	m.SessionCapLeasesRestored(3)
	m.SessionCapLeasesRestored(-1)
	m.SetSessionCapFallback(true)
	m.Handshake(outcome.HandshakeRejectedSessionCap)

	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_session_cap_leases", []string{"scope", "ip"}, 1},
		{"stompgate_session_cap_leases", []string{"scope", "principal"}, 1},
		{"stompgate_session_cap_leases", []string{"scope", "other"}, 1},
		{"stompgate_session_cap_store_errors_total", nil, 1},
		{"stompgate_session_cap_leases_restored_total", nil, 3},
		{"stompgate_session_cap_fallback", nil, 1},
		{"stompgate_handshakes_total", []string{"result", "rejected_session_cap"}, 1},
	}
	for _, tt := range tests {
		if got := sample(t, reg, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	m.SetSessionCapFallback(false)
	if got := sample(t, reg, "stompgate_session_cap_fallback"); got != 0 {
		t.Errorf("fallback after SetSessionCapFallback(false) = %v, want 0", got)
	}
	if got := CapScope(42).String(); got != "other" {
		t.Errorf("CapScope(42).String() = %q, want other", got)
	}
	var nilM *Metrics
	nilM.SessionCapAcquired(CapScopeIP)
	nilM.SessionCapReleased(CapScopeIP)
	nilM.SessionCapStoreError()
	nilM.SessionCapLeasesRestored(1)
	nilM.SetSessionCapFallback(true)
}

func TestIPv6PrefixRefused(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.IPv6PrefixRefused(PrefixLimitHandshake)
	m.IPv6PrefixRefused(PrefixLimitHandshake)
	m.IPv6PrefixRefused(PrefixLimitSessionCap)
	m.IPv6PrefixRefused(PrefixLimit(42))
	var nilMetrics *Metrics
	nilMetrics.IPv6PrefixRefused(PrefixLimitHandshake)
	for _, tt := range []struct {
		limit string
		want  float64
	}{{"handshake", 2}, {"session_cap", 1}, {"other", 1}} {
		if got := sample(t, reg, "stompgate_ipv6_prefix_refusals_total", "limit", tt.limit); got != tt.want {
			t.Errorf("stompgate_ipv6_prefix_refusals_total{limit=%q} = %v, want %v", tt.limit, got, tt.want)
		}
	}
}
