package metrics

import "testing"

func TestHTTPTimedOut(t *testing.T) {
	m, reg := newTestMetrics(t, Config{})
	m.HTTPTimedOut(HTTPTimeoutIdle)
	m.HTTPTimedOut(HTTPTimeoutIdle)
	m.HTTPTimedOut(HTTPTimeoutRead)
	m.HTTPTimedOut(HTTPTimeout(200))
	for _, tt := range []struct {
		kind string
		want float64
	}{
		{"idle", 2},
		{"read", 1},
		{"other", 1},
	} {
		if got := sample(t, reg, "stompgate_http_timeouts_total", "kind", tt.kind); got != tt.want {
			t.Errorf("http_timeouts_total{kind=%q} = %v, want %v", tt.kind, got, tt.want)
		}
	}
	if got := HTTPTimeout(200).String(); got != "other" {
		t.Errorf("HTTPTimeout(200).String() = %q, want other", got)
	}
}
