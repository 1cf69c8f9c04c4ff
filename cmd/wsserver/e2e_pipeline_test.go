package main

import (
	"sync"
	"testing"

	"github.com/stompgate/stompgate/internal/testredis"
)

// TestHandshakePipelineMetrics: with -redis-url, concurrent WebSocket
// handshakes are decided through the Redis pipeline, and /metrics counts
// every decision it carried, the batches, and no full queue.
func TestHandshakePipelineMetrics(t *testing.T) {
	rs := testredis.Start(t)
	// Shedding off: every handshake of the one client address is sent.
	base, _ := startApp(t, "-redis-url", rs.URL(), "-limiter-shed-keys", "0")
	const handshakes = 20
	var wg sync.WaitGroup
	for range handshakes {
		// The test policy refuses most of them (one client address):
		// refused or not, each is one decision.
		wg.Go(func() { _, _, _ = dialWS(t, wsURL(base)) })
	}
	wg.Wait()
	m := scrape(t, base)
	if got := m["stompgate_handshake_redis_batched_decisions_total"]; got != handshakes {
		t.Errorf("stompgate_handshake_redis_batched_decisions_total = %v, want %d", got, handshakes)
	}
	if got := m["stompgate_handshake_redis_batches_total"]; got < 1 || got > handshakes {
		t.Errorf("stompgate_handshake_redis_batches_total = %v, want 1 to %d", got, handshakes)
	}
	if got, ok := m["stompgate_handshake_redis_queue_full_total"]; !ok || got != 0 {
		t.Errorf("stompgate_handshake_redis_queue_full_total = %v (present %v), want 0", got, ok)
	}
	if got := m[`stompgate_handshakes_total{result="store_error"}`]; got != 0 {
		t.Errorf(`stompgate_handshakes_total{result="store_error"} = %v, want 0`, got)
	}
}
