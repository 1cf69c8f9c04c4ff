package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/stompframe"
)

func TestRoomsAgainstStompgate(t *testing.T) {
	url := startStompgate(t, 20)
	// 3 rooms of 6 and a last room of 2; heart-beats every 200 ms so
	// that several go out during the run.
	cfg := roomsConfig{Common: testCommon(url, 2*time.Second), sessions: 20, roomSize: 6, rate: 5, size: 64, heartBeat: 200 * time.Millisecond}
	rep, err := rooms(t.Context(), &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := rep.Rooms
	if rr.Rooms != 4 || len(rep.Classes) != 2 {
		t.Fatalf("%d rooms, %d classes; want 4 rooms (3 of 6, 1 of 2) in 2 classes", rr.Rooms, len(rep.Classes))
	}
	full, last := classNamed(t, rep, "rooms"), classNamed(t, rep, "last room")
	if full.Publishers != 18 || last.Publishers != 2 {
		t.Errorf("players: %d in full rooms, %d in the last; want 18 and 2", full.Publishers, last.Publishers)
	}
	// Every message reaches every player of its room, the sender too.
	if rr.Sent == 0 || rr.Delivered != rr.Expected || rr.Expected != full.Sent*6+last.Sent*2 {
		t.Errorf("sent %d (full %d, last %d), expected %d, delivered %d; want sent×room size, all delivered",
			rr.Sent, full.Sent, last.Sent, rr.Expected, rr.Delivered)
	}
	if rr.Errors != 0 {
		t.Errorf("%d errors, want 0", rr.Errors)
	}
	// One player per room records latency, and it receives every message
	// of its room: one sample per message sent.
	if rr.Latency == nil || rr.Latency.Count != rr.Sent {
		t.Errorf("latency %+v, want %d samples (one per message sent)", rr.Latency, rr.Sent)
	}
	if want := float64(18*6+2*2) * 5; rr.OfferedPerSec != want {
		t.Errorf("offered %v deliveries/s, want %v", rr.OfferedPerSec, want)
	}
	srv := rep.Server
	if srv == nil || srv.Frames == nil || srv.Frames.SendReceived != rr.Sent {
		t.Fatalf("server report %+v, want SEND received = %d", srv, rr.Sent)
	}
	// The in-process server's RSS and CPU come from the test registry's
	// process collector.
	if rr.RSSSource != "metrics" || rr.RSSBefore <= 0 || rr.RSSEnd <= 0 {
		t.Errorf("RSS source %q, before %d, end %d; want metrics and positive values", rr.RSSSource, rr.RSSBefore, rr.RSSEnd)
	}
	if rr.ServerCPUPerDeliveredMicros <= 0 {
		t.Errorf("server CPU per delivered %v µs, want positive", rr.ServerCPUPerDeliveredMicros)
	}
}

// frameCounter is a WebSocket server that records how many STOMP frames
// (NUL bytes) each message it reads holds.
type frameCounter struct {
	mu     sync.Mutex
	counts []int // guarded by mu
}

func (f *frameCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		_, b, err := c.Read(r.Context())
		if err != nil {
			return
		}
		f.mu.Lock()
		f.counts = append(f.counts, bytes.Count(b, []byte{0}))
		f.mu.Unlock()
	}
}

func TestFramesPerMessage(t *testing.T) {
	tests := []struct {
		name       string
		perMessage int64
		wantMax    func(maxSeen int) bool
	}{
		{"one frame per message", 1, func(m int) bool { return m == 1 }},
		{"packed", 0, func(m int) bool { return m > 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := &frameCounter{}
			ts := httptest.NewServer(fc)
			defer ts.Close()
			ws, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			conn := &client.Conn{WS: ws, Version: stompframe.V12}
			p := load.NewPublisher(conn, &load.Class{Name: "t"}, 0, "/topic/x", 100)
			p.PerMessage = tt.perMessage
			// 2,000/s on 10 ms ticks: 20 frames due at each tick.
			start := time.Now()
			p.RunPaced(context.Background(), load.Clock{Base: start}, start, start.Add(200*time.Millisecond), 2000)
			sent := p.Sent
			ws.Close(websocket.StatusNormalClosure, "")
			waitFor(t, 10*time.Second, func() bool {
				fc.mu.Lock()
				defer fc.mu.Unlock()
				total := 0
				for _, n := range fc.counts {
					total += n
				}
				return int64(total) == sent
			})
			fc.mu.Lock()
			defer fc.mu.Unlock()
			maxSeen := 0
			for _, n := range fc.counts {
				maxSeen = max(maxSeen, n)
			}
			if sent < 100 || !tt.wantMax(maxSeen) {
				t.Errorf("sent %d frames in %d messages, at most %d in one", sent, len(fc.counts), maxSeen)
			}
		})
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCountsText(t *testing.T) {
	got := countsText(map[string]int64{"rejected": 60, "accepted": 20})
	if want := "accepted 20, rejected 60"; got != want {
		t.Errorf("countsText = %q, want %q", got, want)
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r roomsReport) string {
		t.Helper()
		b, err := json.Marshal(Report{Scenario: "rooms", Rooms: &r})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := write("a.json", roomsReport{Sessions: 1000, DeliveredPerSec: 11000, ServerCPUPerDeliveredMicros: 25,
		RSSPerSessionKiB: 32, Latency: &report.LatencySummary{P50: 0.5, P99: 4}})
	b := write("b.json", roomsReport{Sessions: 1000, DeliveredPerSec: 5500, ServerCPUPerDeliveredMicros: 100,
		RSSPerSessionKiB: 448, Latency: &report.LatencySummary{P50: 1500, P99: 6000}})
	chart := filepath.Join(dir, "c.svg")
	var out bytes.Buffer
	if err := RunCompare(t.Context(), []string{"-names", "sg,rmq", "-chart", chart, a, b}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// CPU 4×, p50 3000×, p99 1500×, RSS 14×, delivered 0.5×.
	want := "| 1000 | **rmq ÷ sg** | 0.5× | | 3000× | 1500× | - | - | **4×** | | 14× |"
	if !strings.Contains(out.String(), want) {
		t.Errorf("compare table:\n%s\nwant the row\n%s", out.String(), want)
	}
	svg, err := os.ReadFile(chart)
	if err != nil {
		t.Fatal(err)
	}
	if bars := strings.Count(string(svg), "<rect x="); bars != 5+1 {
		t.Errorf("chart has %d bars and legend boxes, want 5 bars and 1 legend box", bars)
	}
	if err := RunCompare(t.Context(), []string{a}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "groups of 2") {
		t.Errorf("compare with one file = %v, want an error about groups of 2", err)
	}
}
