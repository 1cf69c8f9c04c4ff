package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestOutboundCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	st := OutboundStats{Queued: 5 << 20, Limit: 256 << 20, Shed: 2}
	if err := reg.Register(NewOutboundCollector(func() OutboundStats { return st })); err != nil {
		t.Fatal(err)
	}
	st.Shed++ // read at the scrape, not at registration
	for _, tt := range []struct {
		name string
		want float64
	}{
		{"stompgate_outbound_queued_bytes", 5 << 20},
		{"stompgate_outbound_budget_bytes", 256 << 20},
		{"stompgate_outbound_budget_sheds_total", 3},
	} {
		if got := sample(t, reg, tt.name); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
}
