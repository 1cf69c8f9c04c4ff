package metrics

import (
	"testing"
	"time"

	"github.com/stompgate/stompgate/handshake"
	"github.com/stompgate/stompgate/outcome"
)

func TestHandshakes(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	for range 4 {
		m.Handshake(outcome.HandshakeAccepted)
	}
	m.Handshake(outcome.HandshakeRejectedLimit)
	m.Handshake(outcome.HandshakeRejectedLimit)
	m.Handshake(outcome.HandshakeRejectedBan)
	m.Handshake(outcome.HandshakeStoreError)
	m.Handshake(&outcome.Handshake{})

	tests := []struct {
		result string
		want   float64
	}{
		{"accepted", 4},
		{"rejected_limit", 2},
		{"rejected_ban", 1},
		{"store_error", 1},
		{"other", 1},
		{"rejected_origin", 0},
		{"rejected_shutdown", 0},
		{"upgrade_failed", 0},
	}
	for _, tt := range tests {
		t.Run(tt.result, func(t *testing.T) {
			t.Parallel()
			if got := sample(t, reg, "stompgate_handshakes_total", "result", tt.result); got != tt.want {
				t.Errorf("handshakes_total{result=%q} = %v, want %v", tt.result, got, tt.want)
			}
		})
	}
}

func TestLimiterDecision(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.LimiterDecision("redis", 700*time.Microsecond)
	m.LimiterDecision("redis", 30*time.Millisecond)
	m.LimiterDecision("redis", time.Second) // above the last bucket
	m.LimiterDecision("memory", 20*time.Microsecond)
	m.LimiterDecision("memory", -time.Millisecond)
	m.LimiterDecision("etcd", time.Millisecond)

	mf := gather(t, reg)["stompgate_handshake_limiter_decision_seconds"]
	if mf == nil {
		t.Fatal("no stompgate_handshake_limiter_decision_seconds family")
	}
	type want struct {
		count uint64
		sum   float64
		// cumulative counts at upper bounds 0.00005, 0.001, 0.05, 0.25
		le map[float64]uint64
	}
	wants := map[string]want{
		"redis":  {3, 0.0007 + 0.03 + 1, map[float64]uint64{0.00005: 0, 0.001: 1, 0.05: 2, 0.25: 2}},
		"memory": {2, 0.00002, map[float64]uint64{0.00005: 2, 0.001: 2, 0.05: 2, 0.25: 2}},
		"other":  {1, 0.001, map[float64]uint64{0.00005: 0, 0.001: 1, 0.05: 1, 0.25: 1}},
		"local":  {0, 0, map[float64]uint64{0.00005: 0, 0.001: 0, 0.05: 0, 0.25: 0}},
	}
	if got := len(mf.GetMetric()); got != len(wants) {
		t.Errorf("decision histogram has %d series, want %d", got, len(wants))
	}
	for _, s := range mf.GetMetric() {
		store := s.GetLabel()[0].GetValue()
		w, ok := wants[store]
		if !ok {
			t.Errorf("unexpected store label %q", store)
			continue
		}
		h := s.GetHistogram()
		if got := h.GetSampleCount(); got != w.count {
			t.Errorf("store %s: count = %d, want %d", store, got, w.count)
		}
		if got := h.GetSampleSum(); got < w.sum-1e-12 || got > w.sum+1e-12 {
			t.Errorf("store %s: sum = %v, want %v", store, got, w.sum)
		}
		if got := len(h.GetBucket()); got != len(LimiterDecisionBuckets) {
			t.Errorf("store %s: %d buckets, want %d", store, got, len(LimiterDecisionBuckets))
		}
		for _, b := range h.GetBucket() {
			if wc, ok := w.le[b.GetUpperBound()]; ok && b.GetCumulativeCount() != wc {
				t.Errorf("store %s: bucket le=%v = %d, want %d", store, b.GetUpperBound(), b.GetCumulativeCount(), wc)
			}
		}
	}
}

func TestLimiterStoreErrorsAndFallback(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	m.LimiterStoreError("redis")
	m.LimiterStoreError("redis")
	m.LimiterStoreError("memcached")
	if got := sample(t, reg, "stompgate_handshake_limiter_store_errors_total", "store", "redis"); got != 2 {
		t.Errorf(`store_errors_total{store="redis"} = %v, want 2`, got)
	}
	if got := sample(t, reg, "stompgate_handshake_limiter_store_errors_total", "store", "other"); got != 1 {
		t.Errorf(`store_errors_total{store="other"} = %v, want 1`, got)
	}
	if got := sample(t, reg, "stompgate_handshake_limiter_store_errors_total", "store", "memory"); got != 0 {
		t.Errorf(`store_errors_total{store="memory"} = %v, want 0`, got)
	}

	steps := []struct {
		active bool
		want   float64
	}{
		{false, 0}, {true, 1}, {true, 1}, {false, 0},
	}
	for i, s := range steps {
		m.SetLimiterFallback(s.active)
		if got := sample(t, reg, "stompgate_handshake_limiter_fallback"); got != s.want {
			t.Errorf("step %d: SetLimiterFallback(%v): gauge = %v, want %v", i, s.active, got, s.want)
		}
	}
}

// The buckets must be strictly increasing and cover 50µs to 250ms, with the
// alert threshold of 50ms on an exact edge.
func TestLimiterDecisionBuckets(t *testing.T) {
	t.Parallel()
	b := LimiterDecisionBuckets
	if b[0] != 0.00005 || b[len(b)-1] != 0.25 {
		t.Errorf("buckets span %v..%v, want 5e-05..0.25", b[0], b[len(b)-1])
	}
	has50ms := false
	for i := range b {
		if i > 0 && b[i] <= b[i-1] {
			t.Errorf("bucket %d (%v) not above bucket %d (%v)", i, b[i], i-1, b[i-1])
		}
		has50ms = has50ms || b[i] == 0.05
	}
	if !has50ms {
		t.Error("no bucket edge at 0.05s, the alert threshold")
	}
}

// TestStoreLabelsAreTheLimiters checks that the store label values are the
// handshake limiter's own names for its stores, which this package spells
// itself so as not to import the limiter's Redis client.
func TestStoreLabelsAreTheLimiters(t *testing.T) {
	t.Parallel()
	for _, s := range []string{handshake.StoreRedis, handshake.StoreMemory} {
		if got := storeLabels[labelIndex(storeLabels, s)]; got != s {
			t.Errorf("storeLabels[labelIndex(storeLabels, %q)] = %q, want %q", s, got, s)
		}
	}
}

func TestLimiterLocalDecision(t *testing.T) {
	t.Parallel()
	m, reg := newTestMetrics(t, Config{})
	for _, r := range []string{handshake.LocalRefused, handshake.LocalRefused, handshake.LocalInFlight,
		handshake.LocalQueueFull, handshake.LocalQueueWait, handshake.LocalTimeout, "bogus"} {
		m.LimiterLocalDecision(r)
	}
	for _, tt := range []struct {
		reason string
		want   float64
	}{{"refused", 2}, {"in_flight", 1}, {"queue_full", 1}, {"queue_wait", 1}, {"timeout", 1}, {"other", 1}} {
		if got := sample(t, reg, "stompgate_handshake_limiter_local_decisions_total", "reason", tt.reason); got != tt.want {
			t.Errorf("local_decisions_total{reason=%q} = %v, want %v", tt.reason, got, tt.want)
		}
	}
}
