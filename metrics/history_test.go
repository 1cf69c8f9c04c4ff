package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/outcome"
)

// The history collector exposes exactly one series per metric and label
// value (13 metrics, two lost reasons, one recovered and one
// not_recovered per reason), read at the scrape.
func TestHistoryCollector(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	st := HistoryStats{Appended: 7, QueueFull: 2, RedisFailed: 1, Epochs: 3, Reads: 4, Shared: 40, Uncoalesced: 1,
		ReadErrors: 2, Recovered: 9, NotRecovered: []uint64{1, 2}, Replayed: 900, Gaps: 5,
		MemoryBytes: 1 << 20, MemoryDestinations: 12, MemoryEvicted: 6}
	if err := reg.Register(NewHistoryCollector(func() HistoryStats { return st })); err != nil {
		t.Fatal(err)
	}
	st.Appended++ // read at the scrape, not at registration
	for _, tt := range []struct {
		name   string
		want   float64
		labels []string
	}{
		{"stompgate_history_appended_total", 8, nil},
		{"stompgate_history_publish_lost_total", 2, []string{"reason", "queue_full"}},
		{"stompgate_history_publish_lost_total", 1, []string{"reason", "redis_error"}},
		{"stompgate_history_epochs_total", 3, nil},
		{"stompgate_history_reads_total", 4, nil},
		{"stompgate_history_reads_shared_total", 40, nil},
		{"stompgate_history_reads_uncoalesced_total", 1, nil},
		{"stompgate_history_read_errors_total", 2, nil},
		{"stompgate_history_recoveries_total", 9, []string{"reason", "none", "result", "recovered"}},
		{"stompgate_history_recoveries_total", 1, []string{"reason", "trimmed", "result", "not_recovered"}},
		{"stompgate_history_recoveries_total", 2, []string{"reason", "too_many", "result", "not_recovered"}},
		{"stompgate_history_recoveries_total", 0, []string{"reason", "invalid", "result", "not_recovered"}},
		{"stompgate_history_replayed_messages_total", 900, nil},
		{"stompgate_history_gaps_total", 5, nil},
		{"stompgate_history_memory_bytes", 1 << 20, nil},
		{"stompgate_history_memory_destinations", 12, nil},
		{"stompgate_history_memory_evictions_total", 6, nil},
	} {
		if got := sample(t, reg, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got, want := seriesCount(t, reg), 13-2+2+1+len(outcome.RecoveryReasons()); got != want {
		t.Errorf("series = %d, want %d", got, want)
	}
}
