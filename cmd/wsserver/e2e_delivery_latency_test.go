package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
)

// TestDeliveryLatencyByPath runs two wsservers on one real Redis with the
// relay, go-stomp clients on both, and publishes by every path: SENDs from
// a client of instance A (local on A, relay on B) and the server API of A
// (api on A, relay on B). Once every client has read every MESSAGE, each
// instance's delivery latency histogram has counted exactly the MESSAGEs
// it wrote, by path, as many as stompgate_messages_delivered_total, and
// its outbound queue wait histogram as many again.
func TestDeliveryLatencyByPath(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c := startInstances(t, 2, rs.URL(), "-api-key", "k3y")
	const dest = "/topic/latency"
	a1 := subscribe(t, dialStomp(t, wsURL(c.bases[0])), dest)
	a2 := subscribe(t, dialStomp(t, wsURL(c.bases[0])), dest)
	b1 := subscribe(t, dialStomp(t, wsURL(c.bases[1])), dest)
	pub := dialStomp(t, wsURL(c.bases[0]))
	c.waitRelaySubscribed(t, rdb, dest, false)

	const sends, calls = 5, 3
	for i := range sends {
		if err := pub.Send(dest, "text/plain", fmt.Appendf(nil, "send %d", i)); err != nil {
			t.Fatalf("SEND: %v", err)
		}
	}
	for i := range calls {
		code, v := apiCall(t, c.bases[0], "k3y", "POST", "/api/v1/publish", fmt.Sprintf(`{"destination":%q,"body":"api %d"}`, dest, i))
		if code != http.StatusAccepted {
			t.Fatalf("publish: %d %v", code, v)
		}
	}
	for name, sub := range map[string]*stomp.Subscription{"a1": a1, "a2": a2, "b1": b1} {
		for i := range sends + calls {
			if m := nextMessage(t, sub); m == nil {
				t.Fatalf("%s: message %d missing", name, i)
			}
		}
	}

	const latency = "stompgate_delivery_latency_seconds_count"
	for _, want := range []struct {
		instance          int
		local, relay, api float64
	}{
		{0, 2 * sends, 0, 2 * calls},
		{1, 0, sends + calls, 0},
	} {
		base := c.bases[want.instance]
		// A client may read a MESSAGE before its writer has timed the
		// write that carried it.
		waitFor(t, clientTimeout, func() error {
			s := scrape(t, base)
			got := [3]float64{s.sum(latency, `path="local"`), s.sum(latency, `path="relay"`), s.sum(latency, `path="api"`)}
			if got != [3]float64{want.local, want.relay, want.api} {
				return fmt.Errorf("instance %d: delivery latency counts local, relay, api = %v, want %v", want.instance, got, [3]float64{want.local, want.relay, want.api})
			}
			return nil
		})
		s := scrape(t, base)
		total := want.local + want.relay + want.api
		if got := s.sum("stompgate_messages_delivered_total"); got != total {
			t.Errorf("instance %d: messages delivered %v, want %v", want.instance, got, total)
		}
		if got := s.sum(latency, `path="other"`); got != 0 {
			t.Errorf("instance %d: delivery latency count for path other = %v, want 0", want.instance, got)
		}
		if got := s.sum("stompgate_outbound_queue_wait_seconds_count"); got != total {
			t.Errorf("instance %d: outbound queue wait count %v, want %v", want.instance, got, total)
		}
		if sum := s.sum("stompgate_delivery_latency_seconds_sum"); sum <= 0 || sum > total*clientTimeout.Seconds() {
			t.Errorf("instance %d: delivery latency sum %vs for %v messages", want.instance, sum, total)
		}
	}
}
