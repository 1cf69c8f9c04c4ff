package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/server"
)

// TestInboundBudgetE2E floods ACK frames, which no other limit applies
// to, packed 300 to a WebSocket message, from one session of the real
// server: it reads at most its budget per window, counts the pauses, and
// keeps the flooder's session open while another session is served.
func TestInboundBudgetE2E(t *testing.T) {
	const limit, window = 600, 100 * time.Millisecond
	base, _ := startApp(t, "-inbound-frames", fmt.Sprint(limit), "-inbound-window", window.String())
	flooder := stomptest.DialRaw(t, wsURL(base), "v12.stomp")
	flooder.Connect()

	msg := []byte(strings.Repeat("ACK\nid:1\n\n\x00", 300))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			err := flooder.WS.Write(wctx, websocket.MessageText, msg)
			wcancel()
			if err != nil {
				return
			}
		}
	}()
	waitFor(t, 30*time.Second, func() error {
		if n := scrape(t, base).sum("stompgate_input_pauses_total", `budget="frames"`); n < 5 {
			return fmt.Errorf("stompgate_input_pauses_total{budget=\"frames\"} = %v, want 5 or more", n)
		}
		return nil
	})
	acks := scrape(t, base).sum("stompgate_frames_received_total", `command="ACK"`)
	elapsed := time.Since(start)

	// Each ACK costs one frame of the budget, its WebSocket message one
	// more: no window read more than the budget, and a slow machine
	// reads less.
	if most := float64(int64(elapsed/window)+2) * limit; acks > most {
		t.Errorf("%v ACKs read in %v; the budget allows at most %v", acks, elapsed, most)
	}
	if s := scrape(t, base).sum("stompgate_input_paused_seconds_total"); s <= 0 {
		t.Errorf("stompgate_input_paused_seconds_total = %v, want more than 0", s)
	}

	// Another session is served while the flood goes on, and the flooder
	// is still open: a pause does not close.
	other := stomptest.DialRaw(t, wsURL(base), "v12.stomp")
	other.Connect()
	other.Send("SUBSCRIBE\nid:0\ndestination:/topic/x\nreceipt:ok\n\n\x00")
	other.Expect("RECEIPT")
	if n := scrape(t, base).sum("stompgate_sessions_active"); n != 2 {
		t.Errorf("stompgate_sessions_active = %v, want 2", n)
	}
	cancel()
	<-done
}

// TestInboundBudgetDefaults checks the budget wsserver gives the server:
// the flags when set, else derived from the send limit, never below the
// server's defaults.
func TestInboundBudgetDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		args                  []string
		wantFrames, wantBytes int
	}{
		{"defaults", nil, server.DefaultInboundFrames, server.DefaultInboundBytes},
		{"set", []string{"-inbound-frames", "50", "-inbound-bytes", "1000"}, 50, 1000},
		{"raised send limit", []string{"-send-limit", "1000000"}, 4_000_000, 1_000_000 * 64 << 10},
		{"longer window", []string{"-send-limit", "1000", "-inbound-window", "2s"}, 8000, 2000 * 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st settings
			if err := st.parse(tc.args, func(string) string { return "" }, nil); err != nil {
				t.Fatal(err)
			}
			if f, b := st.inboundBudget(); f != tc.wantFrames || b != tc.wantBytes {
				t.Errorf("inboundBudget() = %d, %d, want %d, %d", f, b, tc.wantFrames, tc.wantBytes)
			}
		})
	}
}

func TestInboundSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-inbound-frames", "-1"}, nil, "-inbound-frames (WSSERVER_INBOUND_FRAMES) -1: must not be negative"},
		{"", []string{"-inbound-bytes", "-1"}, nil, "-inbound-bytes (WSSERVER_INBOUND_BYTES) -1: must not be negative"},
		{"", []string{"-inbound-window", "0s"}, nil, "-inbound-window (WSSERVER_INBOUND_WINDOW) 0s: must be positive"},
		{"", nil, map[string]string{"WSSERVER_INBOUND_FRAMES": "lots"}, "WSSERVER_INBOUND_FRAMES"},
		{"", []string{"-remembered-tokens", "0"}, nil, "-remembered-tokens (WSSERVER_REMEMBERED_TOKENS) 0: must be positive"},
		{"", []string{"-token-checks", "-1"}, nil, "-token-checks (WSSERVER_TOKEN_CHECKS) -1: must be positive"},
		{"", []string{"-token-check-window", "0s"}, nil, "-token-check-window (WSSERVER_TOKEN_CHECK_WINDOW) 0s: must be positive"},
	})
}
