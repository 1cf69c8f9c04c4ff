package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// TestAbuseEscalationBans: with escalation on, a session that keeps
// flooding past the limit gets one ERROR ("rate limit exceeded") and a
// close, and its client IP is banned: the next handshake from it is
// refused by the handshake limiter before any WebSocket work.
func TestAbuseEscalationBans(t *testing.T) {
	base, _ := startApp(t,
		"-send-limit", "2", "-send-window", "1s",
		"-abuse-drops", "5", "-abuse-window", "10s", "-abuse-ban", "1m")
	ws, resp, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatalf("dial: %v (%s)", err, describe(resp))
	}
	c := stomptest.NewRaw(t, ws)
	c.Send("CONNECT\naccept-version:1.2\nhost:e2e\nheart-beat:0,0\n\n\x00")
	if f := c.Read(); f.Command != "CONNECTED" {
		t.Fatalf("got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	// 2 pass, the next 5 are dropped; the 5th drop escalates.
	c.Send(strings.Repeat("SEND\ndestination:/topic/e2e.abuse\n\nx\x00", 10))
	f := c.Read()
	if f.Command != "ERROR" || f.Get("message") != "rate limit exceeded" {
		t.Fatalf("got %s %v, want ERROR with message \"rate limit exceeded\"", f.Command, f.Headers)
	}
	// Reading answers the server's close frame.
	if _, _, err := ws.Read(t.Context()); err == nil {
		t.Fatalf("connection still open after the ERROR")
	}

	waitFor(t, clientTimeout, func() error {
		m := scrape(t, base)
		if got := m[`stompgate_sessions_closed_total{reason="rate_limit_abuse"}`]; got != 1 {
			return fmt.Errorf("sessions closed for rate_limit_abuse: %v, want 1", got)
		}
		return nil
	})

	_, resp, err = dialWS(t, wsURL(base))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake after the ban: got %v (%s), want 429", err, describe(resp))
	}
	m := scrape(t, base)
	if got := m[`stompgate_handshakes_total{result="rejected_ban"}`]; got != 1 {
		t.Errorf("handshakes rejected_ban: got %v, want 1", got)
	}
	// received = passed + dropped holds for the escalated session too:
	// 2 passed, 5 dropped by the limiter (the last one escalated); the
	// frames behind the escalation were never read into the chain.
	if r, p, d := m.sum("stompgate_frames_received_total", `command="SEND"`),
		m.sum("stompgate_frames_passed_total", `command="SEND"`),
		m.sum("stompgate_frames_dropped_total", `command="SEND"`); r != p+d || p != 2 || d != 5 {
		t.Errorf("SEND received %v, passed %v, dropped %v; want 7 = 2 + 5", r, p, d)
	}
}
