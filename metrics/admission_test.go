package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestAdmissionCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.AdmissionRefused(AdmissionReasonOf("memory"))
	m.AdmissionRefused(AdmissionReasonOf("rate"))
	m.AdmissionRefused(AdmissionReasonOf("rate"))
	m.AdmissionRefused(AdmissionReasonOf("no such reason"))
	m.AdmissionAdmitted()
	for _, c := range []struct {
		reason string
		want   float64
	}{
		{"memory", 1}, {"rate", 2}, {"sessions", 0}, {"other", 1},
	} {
		if got := sample(t, reg, "stompgate_admission_refused_total", "reason", c.reason); got != c.want {
			t.Errorf("refused{%s} = %v, want %v", c.reason, got, c.want)
		}
	}
	if got := sample(t, reg, "stompgate_admission_admitted_total"); got != 1 {
		t.Errorf("admitted = %v, want 1", got)
	}
	var nilMetrics *Metrics
	nilMetrics.AdmissionRefused(AdmissionRate)
	nilMetrics.AdmissionAdmitted()
}

func TestAdmissionCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	st := AdmissionStats{Sessions: 7, MaxSessions: 10, MemoryUsed: 900, MemoryLimit: 1000, Refusing: "memory", Backlog: 3, PeakAdmitted: 60}
	reg.MustRegister(NewAdmissionCollector(func() AdmissionStats { return st }))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_admission_sessions", nil, 7},
		{"stompgate_admission_max_sessions", nil, 10},
		{"stompgate_admission_memory_bytes", nil, 900},
		{"stompgate_admission_memory_limit_bytes", nil, 1000},
		{"stompgate_admission_refusing", []string{"reason", "memory"}, 1},
		{"stompgate_admission_refusing", []string{"reason", "sessions"}, 0},
		{"stompgate_admission_retry_backlog", nil, 3},
		{"stompgate_admission_peak_admitted", nil, 60},
	} {
		if got := sample(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestListenerCounters(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.ListenerRefused(ListenerReasonOf("accept_rate"))
	m.ListenerRefused(ListenerReasonOf("pending_addr"))
	m.ListenerRefused(ListenerReasonOf("pending_addr"))
	m.ListenerRefused(ListenerReasonOf("no such reason"))
	m.ListenerEvicted()
	for _, c := range []struct {
		reason string
		want   float64
	}{
		{"accept_rate", 1}, {"pending", 0}, {"pending_addr", 2}, {"other", 1},
	} {
		if got := sample(t, reg, "stompgate_listener_refused_total", "reason", c.reason); got != c.want {
			t.Errorf("refused{%s} = %v, want %v", c.reason, got, c.want)
		}
	}
	if got := sample(t, reg, "stompgate_listener_evicted_total"); got != 1 {
		t.Errorf("evicted = %v, want 1", got)
	}
	var nilMetrics *Metrics
	nilMetrics.ListenerRefused(ListenerRate)
	nilMetrics.ListenerEvicted()
}
