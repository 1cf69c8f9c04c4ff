package scenario

import (
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
)

// TestRoomsSplitsLatency runs rooms against a real stompgate with kernel
// stamps on: every latency recorded is split in two parts that add up to
// it, the server's part never above it, and the report's figures come
// from those samples.
func TestRoomsSplitsLatency(t *testing.T) {
	url := startStompgate(t, 20)
	var (
		mu      sync.Mutex
		samples []load.Sample
	)
	cfg := roomsConfig{Common: testCommon(url, 3*time.Second), sessions: 18, roomSize: 6, rate: 5, size: 64,
		measure: roomsMeasure{protocol: "stomp", kernelStamps: true, warmup: time.Second, trace: func(s load.Sample) {
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}}}
	rep, err := rooms(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Rooms
	if rr.Latency == nil || rr.Errors != 0 || rr.Delivered != rr.Expected {
		t.Fatalf("latency %+v, %d errors, delivered %d of %d; want latencies, no error, everything", rr.Latency, rr.Errors, rr.Delivered, rr.Expected)
	}
	// The warm-up's messages are left out: fewer samples than messages
	// sent (one per message, by one player per room).
	if rr.Latency.Count >= rr.Sent || rr.Latency.Count == 0 {
		t.Errorf("%d latencies of %d messages sent, want some but not those of the 1 s warm-up", rr.Latency.Count, rr.Sent)
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(len(samples)) != rr.Latency.Count {
		t.Fatalf("%d samples traced, %d in the latency", len(samples), rr.Latency.Count)
	}
	split := 0
	for i, s := range samples {
		if !s.Split {
			continue
		}
		split++
		if s.Server+s.Tool != s.Total || s.Server > s.Total || s.Server < 0 || s.Tool < 0 {
			t.Fatalf("sample %d: server %v + tool %v against total %v; want parts in [0, total] adding up to it", i, s.Server, s.Tool, s.Total)
		}
	}
	if int64(split) != rr.Split || rr.Split+rr.Unsplit != rr.Latency.Count {
		t.Errorf("%d samples split, report %d split and %d not, of %d", split, rr.Split, rr.Unsplit, rr.Latency.Count)
	}
	if !client.KernelStampsSupported {
		if rr.Unsplit != rr.Latency.Count || rr.ServerPart != nil {
			t.Errorf("unsplit %d of %d, server part %+v; want all unsplit, no part", rr.Unsplit, rr.Latency.Count, rr.ServerPart)
		}
		return
	}
	// The kernel turns stamping on in deferred work when the first
	// socket of the system asks, so the first reads of a run may come
	// unstamped; after the warm-up, nearly all are.
	if rr.Split*10 < rr.Latency.Count*9 || rr.ServerPart == nil || rr.ToolPart == nil {
		t.Fatalf("split %d of %d, parts %+v %+v; want nearly every latency split", rr.Split, rr.Latency.Count, rr.ServerPart, rr.ToolPart)
	}
	if rr.ServerPart.P99 > rr.Latency.P99 || rr.ToolPart.P99 > rr.Latency.P99 || rr.ServerPart.Max > rr.Latency.Max {
		t.Errorf("server part p99 %v, tool part p99 %v, latency p99 %v; want neither part above the whole",
			rr.ServerPart.P99, rr.ToolPart.P99, rr.Latency.P99)
	}
	if n := len(rr.P99Series); n < 2 || n > 4 || len(rr.ServerP99Series) != n {
		t.Errorf("per-second p99 %v, server part %v; want one value per second of the 3 s load in each", rr.P99Series, rr.ServerP99Series)
	}
	// One publisher per room times its wake-ups: 4 rooms, 5 a second.
	if l := rr.TimerLateness; l == nil || l.Count < 4 {
		t.Errorf("timer lateness %+v, want the wake-ups of one publisher per room", l)
	}
	// The messages of one publisher per room were timed to their writes.
	if l := rr.PublisherWrite; l == nil || l.Count == 0 || l.Count > rr.Sent {
		t.Errorf("publisher writes %+v, want some of the %d messages sent", l, rr.Sent)
	}
}

// TestRoomsKernelStampsOff: without kernel stamps nothing is split.
func TestRoomsKernelStampsOff(t *testing.T) {
	url := startStompgate(t, 20)
	cfg := roomsConfig{Common: testCommon(url, time.Second), sessions: 6, roomSize: 3, rate: 5, size: 64,
		measure: roomsMeasure{protocol: "stomp"}}
	rep, err := rooms(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Rooms
	if rr.Latency == nil || rr.Split != 0 || rr.ServerPart != nil || rr.Unsplit != rr.Latency.Count {
		t.Errorf("latency %+v, split %d, unsplit %d, server part %+v; want every latency unsplit", rr.Latency, rr.Split, rr.Unsplit, rr.ServerPart)
	}
}

func TestRoomsMeasureValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    roomsMeasure
		body string
		ok   bool
		hb   time.Duration
	}{
		{"stomp", roomsMeasure{protocol: "stomp"}, load.BodyPad, true, 0},
		{"centrifugo pad", roomsMeasure{protocol: "centrifugo"}, load.BodyPad, true, 0},
		{"centrifugo chat", roomsMeasure{protocol: "centrifugo"}, "chat", false, 0},
		{"centrifugo with heart-beats", roomsMeasure{protocol: "centrifugo"}, load.BodyPad, false, time.Second},
		{"stomp with heart-beats", roomsMeasure{protocol: "stomp"}, load.BodyPad, true, time.Second},
		{"unknown protocol", roomsMeasure{protocol: "mqtt"}, load.BodyPad, false, 0},
		{"negative warm-up", roomsMeasure{protocol: "stomp", warmup: -time.Second}, load.BodyPad, false, 0},
		{"warm-up as long as the load", roomsMeasure{protocol: "stomp", warmup: 10 * time.Second}, load.BodyPad, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := roomsConfig{Common: Common{Duration: 10 * time.Second}, body: tc.body, heartBeat: tc.hb}
			if err := tc.m.validate(&c); (err == nil) != tc.ok {
				t.Errorf("validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
