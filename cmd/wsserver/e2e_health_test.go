package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// get returns the status and body of GET base+path.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// TestHealthAndReadiness checks the probes around a graceful shutdown:
// alive and ready while serving; once Shutdown has begun, still alive but
// not ready, open sessions closed as "shutdown", and new WebSocket
// handshakes refused with 503 and Retry-After.
func TestHealthAndReadiness(t *testing.T) {
	base, a := startApp(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, base, path); code != http.StatusOK {
			t.Errorf("GET %s while serving: got %d, want 200", path, code)
		}
	}
	_ = dialStomp(t, wsURL(base))

	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	if err := a.stomp.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if code, _ := get(t, base, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz after Shutdown: got %d, want 200 (the process is alive)", code)
	}
	if code, _ := get(t, base, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz after Shutdown: got %d, want 503", code)
	}
	_, resp, err := dialWS(t, wsURL(base))
	if err == nil {
		t.Fatalf("handshake after Shutdown: accepted, want 503")
	}
	if resp == nil {
		t.Fatalf("handshake after Shutdown: %v, want 503", err)
	}
	if ra := resp.Header.Get("Retry-After"); resp.StatusCode != http.StatusServiceUnavailable || (ra != "1" && ra != "2") {
		t.Errorf("handshake after Shutdown: got %s, want 503 with Retry-After 1 or 2 (1 s and its jitter)", describe(resp))
	}
	m := scrape(t, base)
	if got := m["stompgate_sessions_active"]; got != 0 {
		t.Errorf("sessions active after Shutdown: got %v, want 0", got)
	}
	if got := m[`stompgate_sessions_closed_total{reason="shutdown"}`]; got != 1 {
		t.Errorf("sessions closed for shutdown: got %v, want 1", got)
	}
}

// TestHandshakeResults checks stompgate_handshakes_total{result} for
// handshakes that pass the per-IP limiter but are not upgraded: the
// metric's documented results say why, and none of them is "accepted"
// ("the upgrade went through").
func TestHandshakeResults(t *testing.T) {
	for _, tc := range []struct {
		name     string
		result   string
		status   int
		attempt  func(t *testing.T, base string) int
		shutdown bool
	}{
		{
			name: "cross-origin page", result: "rejected_origin", status: http.StatusForbidden,
			attempt: func(t *testing.T, base string) int {
				ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
				defer cancel()
				ws, resp, err := websocket.Dial(ctx, wsURL(base), &websocket.DialOptions{
					Subprotocols: []string{"v12.stomp"},
					HTTPHeader:   http.Header{"Origin": {"https://elsewhere.example"}},
				})
				if err == nil {
					_ = ws.CloseNow()
					return http.StatusSwitchingProtocols
				}
				return statusOf(resp)
			},
		},
		{
			name: "plain GET", result: "upgrade_failed", status: http.StatusUpgradeRequired,
			attempt: func(t *testing.T, base string) int {
				code, _ := get(t, base, "/ws")
				return code
			},
		},
		{
			name: "during shutdown", result: "rejected_shutdown", status: http.StatusServiceUnavailable, shutdown: true,
			attempt: func(t *testing.T, base string) int {
				_, resp, err := dialWS(t, wsURL(base))
				if err == nil {
					return http.StatusSwitchingProtocols
				}
				return statusOf(resp)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, a := startApp(t)
			if tc.shutdown {
				ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
				defer cancel()
				if err := a.stomp.Shutdown(ctx); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			}
			if got := tc.attempt(t, base); got != tc.status {
				t.Fatalf("handshake: got status %d, want %d", got, tc.status)
			}
			m := scrape(t, base)
			var counts []string
			for key, v := range m {
				if strings.HasPrefix(key, "stompgate_handshakes_total{") && v != 0 {
					counts = append(counts, fmt.Sprintf("%s=%v", key, v))
				}
			}
			if got := m[`stompgate_handshakes_total{result="`+tc.result+`"}`]; got != 1 {
				t.Errorf("handshakes with result %s: got %v, want 1 (non-zero counts: %v)", tc.result, got, counts)
			}
			if got := m[`stompgate_handshakes_total{result="accepted"}`]; got != 0 {
				t.Errorf("handshakes accepted: got %v, want 0 (non-zero counts: %v)", got, counts)
			}
		})
	}
}

// statusOf is the status code of a refused handshake's response, 0 when
// there was none.
func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}
