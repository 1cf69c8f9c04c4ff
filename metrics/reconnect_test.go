package metrics

import (
	"testing"

	"github.com/stompgate/stompgate/outcome"
)

func TestReconnect(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.ReconnectCounted(ReconnectScopeAddress, outcome.StoreRedis)
	m.ReconnectCounted(ReconnectScopeAddress, outcome.StoreRedis)
	m.ReconnectCounted(ReconnectScopePrincipal, outcome.StoreMemory)
	m.ReconnectCounted(ReconnectScope(42), "elsewhere")
	m.ReconnectBanned(ReconnectScopeOf(outcome.ReconnectScopePrincipal))
	m.ReconnectBanned(ReconnectScopeOf("nobody"))
	m.ReconnectStoreError()
	m.SetReconnectFallback(true)
	for _, tt := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_reconnect_connects_total", []string{"scope", "address", "store", "redis"}, 2},
		{"stompgate_reconnect_connects_total", []string{"scope", "principal", "store", "memory"}, 1},
		{"stompgate_reconnect_connects_total", []string{"scope", "other", "store", "other"}, 1},
		{"stompgate_reconnect_bans_total", []string{"scope", "principal"}, 1},
		{"stompgate_reconnect_bans_total", []string{"scope", "other"}, 1},
		{"stompgate_reconnect_store_errors_total", nil, 1},
		{"stompgate_reconnect_fallback", nil, 1},
	} {
		if got := sample(t, reg, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	m.SetReconnectFallback(false)
	if got := sample(t, reg, "stompgate_reconnect_fallback"); got != 0 {
		t.Errorf("fallback after SetReconnectFallback(false) = %v, want 0", got)
	}
	if got := ReconnectScopeAddress.String(); got != "address" {
		t.Errorf("ReconnectScopeAddress.String() = %q, want address", got)
	}
	var nilM *Metrics
	nilM.ReconnectCounted(ReconnectScopeAddress, outcome.StoreRedis)
	nilM.ReconnectBanned(ReconnectScopeAddress)
	nilM.ReconnectStoreError()
	nilM.SetReconnectFallback(true)
}
