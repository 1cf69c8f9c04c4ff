package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// TestPrincipalBanFollowsAcrossIPs: a session escalated for abuse bans its
// principal as well as its IP. The same principal coming back from
// another IP passes the handshake (that IP is not banned) and is refused
// at CONNECT with ERROR "banned"; another principal from that IP connects.
func TestPrincipalBanFollowsAcrossIPs(t *testing.T) {
	const secret = "e2e secret for principal bans, 32+ bytes"
	base, _ := startApp(t,
		"-jwt-secret", secret,
		"-send-limit", "2", "-send-window", "1s",
		"-abuse-drops", "5", "-abuse-window", "10s", "-abuse-ban", "1m",
		"-trusted-proxies", "127.0.0.1/32")
	mallory := signToken(t, secret, "mallory")

	// Session 1, from 10.0.0.1: flood until escalation.
	c := dialFrom(t, base, "10.0.0.1")
	c.Send(connectFrame(mallory))
	if f := c.Read(); f.Command != "CONNECTED" || f.Get("user-name") != "mallory" {
		t.Fatalf("got %s %v, want CONNECTED for mallory", f.Command, f.Headers)
	}
	c.Send(strings.Repeat("SEND\ndestination:/topic/e2e.ban\n\nx\x00", 10))
	if f := c.Read(); f.Command != "ERROR" || f.Get("message") != "rate limit exceeded" {
		t.Fatalf("got %s %v, want ERROR with message \"rate limit exceeded\"", f.Command, f.Headers)
	}
	expectClosed(t, c)

	// Session 2, same principal from 10.0.0.2: the handshake passes, the
	// CONNECT does not.
	c = dialFrom(t, base, "10.0.0.2")
	c.Send(connectFrame(mallory))
	f := c.Read()
	if f.Command != "ERROR" || f.Get("message") != "banned" {
		t.Fatalf("got %s %v, want ERROR with message \"banned\"", f.Command, f.Headers)
	}
	if body := string(f.Body); !strings.Contains(body, "this principal is banned for another") {
		t.Errorf("ERROR body %q does not say how long the ban holds", body)
	}
	// The retry-after header: the minute's ban left, with up to 10 s of
	// jitter above it.
	if ra, err := strconv.Atoi(f.Get("retry-after")); err != nil || ra < 50 || ra > 70 {
		t.Errorf("ERROR retry-after %q, want the ban's minute left (50 to 70 s)", f.Get("retry-after"))
	}
	expectClosed(t, c)

	// Session 3, another principal from 10.0.0.2: not banned.
	c = dialFrom(t, base, "10.0.0.2")
	c.Send(connectFrame(signToken(t, secret, "alice")))
	if f := c.Read(); f.Command != "CONNECTED" || f.Get("user-name") != "alice" {
		t.Fatalf("got %s %v, want CONNECTED for alice", f.Command, f.Headers)
	}

	// The abuser's own IP is still refused at the handshake.
	if _, resp, err := dialHeader(t, wsURL(base), "10.0.0.1"); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("handshake from the banned IP: got %v (%s), want 429", err, describe(resp))
	}

	// Both closes count as abuse, neither as an authentication failure.
	waitFor(t, clientTimeout, func() error {
		m := scrape(t, base)
		if got := m[`stompgate_sessions_closed_total{reason="rate_limit_abuse"}`]; got != 2 {
			return fmt.Errorf("sessions closed for rate_limit_abuse: %v, want 2", got)
		}
		if got := m[`stompgate_sessions_closed_total{reason="auth_failed"}`]; got != 0 {
			return fmt.Errorf("sessions closed for auth_failed: %v, want 0", got)
		}
		return nil
	})
}

// signToken returns an HS256 JWT for sub, valid for an hour.
func signToken(t *testing.T, secret, sub string) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"sub": sub,
		"exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString([]byte(secret))
	if err != nil {
		t.Fatalf("signing a token for %q: %v", sub, err)
	}
	return tok
}

// connectFrame is a STOMP 1.2 CONNECT carrying token as its passcode.
func connectFrame(token string) string {
	return "CONNECT\naccept-version:1.2\nhost:e2e\nheart-beat:0,0\nlogin:e2e\npasscode:" + token + "\n\n\x00"
}

// dialHeader performs the WebSocket handshake with X-Real-IP set to ip,
// which the server believes from a trusted proxy. A connection it returns
// is closed when the test ends.
func dialHeader(t *testing.T, url, ip string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		Subprotocols: []string{stomptest.Subprotocol},
		HTTPHeader:   http.Header{"X-Real-Ip": {ip}},
	})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws, resp, nil
}

// dialFrom is dialHeader returning a frameClient; a refused handshake
// fails the test.
func dialFrom(t *testing.T, base, ip string) *frameClient {
	t.Helper()
	ws, resp, err := dialHeader(t, wsURL(base), ip)
	if err != nil {
		t.Fatalf("dial from %s: %v (%s)", ip, err, describe(resp))
	}
	return stomptest.NewRaw(t, ws)
}

// expectClosed fails the test unless the server has closed c's
// connection; reading answers the server's close frame.
func expectClosed(t *testing.T, c *frameClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	if _, _, err := c.WS.Read(ctx); err == nil {
		t.Fatal("connection still open after the ERROR")
	} else if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
		t.Fatalf("close status %v (%v), want %v", s, err, websocket.StatusPolicyViolation)
	}
}
