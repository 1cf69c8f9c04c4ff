package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/testredis"
)

// reconnectLimit is the -reconnect-limit of these tests: small, so that
// a loop is a handful of sessions; the window and ban are a minute.
const reconnectLimit = 3

// reconnectArgs are the settings every test here starts with: the limit,
// and X-Real-IP believed from the test's own loopback.
var reconnectArgs = []string{
	"-reconnect-limit", strconv.Itoa(reconnectLimit), "-reconnect-window", "1m", "-reconnect-ban", "1m",
	"-trusted-proxies", "127.0.0.1/32",
}

// retryAfterAboutBan fails the test unless resp is a 429 whose
// Retry-After is the rest of a one-minute ban (50 to 60 s: the ban began
// moments ago) with the refusals' jitter above it (up to 10 s more), not
// the handshake rate's few seconds.
func retryAfterAboutBan(t *testing.T, resp *http.Response, err error) {
	t.Helper()
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake from the looping address: %v (%s), want 429", err, describe(resp))
	}
	secs, perr := strconv.Atoi(resp.Header.Get("Retry-After"))
	if perr != nil || secs < 50 || secs > 70 {
		t.Errorf("Retry-After %q, want the rest of the 1m ban and its jitter (50-70 s)", resp.Header.Get("Retry-After"))
	}
}

// TestReconnectLoopAddress: one address completes -reconnect-limit
// CONNECTs with the go-stomp client; its next CONNECT is refused with
// ERROR "banned", and its next handshake with 429 and a Retry-After of
// the ban, before any STOMP frame is read: the handshake carries an
// invalid token that nobody looks at (no CONNECT received, no
// authentication failure). Another address is not affected.
func TestReconnectLoopAddress(t *testing.T) {
	const secret = "e2e secret for reconnect loops, 32+ bytes"
	base, _ := startApp(t, append([]string{"-jwt-secret", secret}, reconnectArgs...)...)
	const ip = "10.9.0.1"
	for i := range reconnectLimit {
		ws, resp, err := dialHeader(t, wsURL(base), ip)
		if err != nil {
			t.Fatalf("handshake %d: %v (%s)", i+1, err, describe(resp))
		}
		disconnect(t, connectStomp(t, ws, stomp.ConnOpt.Login("e2e", signToken(t, secret, fmt.Sprint("user", i)))))
	}
	c := dialFrom(t, base, ip)
	c.Send(connectFrame(signToken(t, secret, "user-next")))
	f := c.Read()
	if f.Command != "ERROR" || f.Get("message") != "banned" {
		t.Fatalf("CONNECT %d: got %s %v, want ERROR \"banned\"", reconnectLimit+1, f.Command, f.Headers)
	}
	if body := string(f.Body); !strings.Contains(body, "this address is banned for another 60 s") {
		t.Errorf("ERROR body %q does not say what is banned and for how long", body)
	}
	expectClosed(t, c)

	before := scrape(t, base)
	_, resp, err := dialHeader(t, wsURL(base)+"?access_token=not-a-token", ip)
	retryAfterAboutBan(t, resp, err)
	after := scrape(t, base)
	if got := after.sum("stompgate_handshakes_total", `result="rejected_ban"`); got != 1 {
		t.Errorf("handshakes rejected for a ban: %v, want 1", got)
	}
	for _, name := range []string{"stompgate_frames_received_total", "stompgate_sessions_opened_total"} {
		if b, a := before.sum(name), after.sum(name); a != b {
			t.Errorf("%s went from %v to %v across the refused handshake: a STOMP session began", name, b, a)
		}
	}
	if got := after.sum("stompgate_sessions_closed_total", `reason="auth_failed"`); got != 0 {
		t.Errorf("sessions closed for auth_failed: %v, want 0 (no token was checked)", got)
	}

	other := dialFrom(t, base, "10.9.0.2")
	if f := other.Connect(); f.Command != "CONNECTED" {
		t.Fatalf("another address: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	if got := after.sum("stompgate_reconnect_bans_total", `scope="address"`); got != 1 {
		t.Errorf("address bans: %v, want 1", got)
	}
	if got := after.sum("stompgate_reconnect_connects_total", `scope="address"`, `store="memory"`); got != reconnectLimit+1 {
		t.Errorf("address CONNECTs counted in memory: %v, want %d", got, reconnectLimit+1)
	}
}

// TestReconnectLoopPrincipalAcrossInstances: a verified principal loops
// from a new address each time, across two instances sharing Redis. The
// CONNECT that passes the limit is refused on the first instance; the
// next one, on the second instance and from yet another address, is
// refused there too with ERROR "banned" and the rest of the ban.
// Another principal from that address connects.
func TestReconnectLoopPrincipalAcrossInstances(t *testing.T) {
	const secret = "e2e secret for reconnect loops, 32+ bytes"
	rs := testredis.Start(t)
	var bases [2]string
	for i := range bases {
		bases[i], _ = startApp(t, append([]string{"-redis-url", rs.URL(), "-jwt-secret", secret,
			// Under -race on a loaded machine a Redis call can take longer
			// than the 50 ms default; the counter would then count per
			// instance for that call.
			"-redis-timeout", "2s"}, reconnectArgs...)...)
	}
	alice := signToken(t, secret, "alice")
	for i := range reconnectLimit {
		c := dialFrom(t, bases[i%2], fmt.Sprintf("10.8.0.%d", i+1))
		c.Send(connectFrame(alice))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("alice's CONNECT %d: got %s %v, want CONNECTED", i+1, f.Command, f.Headers)
		}
	}
	c := dialFrom(t, bases[1], "10.8.0.10")
	c.Send(connectFrame(alice))
	if f := c.Read(); f.Command != "ERROR" || !strings.Contains(string(f.Body), "this principal is banned") {
		t.Fatalf("alice's CONNECT %d: got %s %v %q, want ERROR naming the principal", reconnectLimit+1, f.Command, f.Headers, f.Body)
	}
	expectClosed(t, c)

	c = dialFrom(t, bases[0], "10.8.0.11")
	c.Send(connectFrame(alice))
	f := c.Read()
	if f.Command != "ERROR" || f.Get("message") != "banned" {
		t.Fatalf("alice on the other instance: got %s %v, want ERROR \"banned\"", f.Command, f.Headers)
	}
	var secs int
	if _, err := fmt.Sscanf(string(f.Body), "this principal is banned for another %d s", &secs); err != nil || secs < 50 || secs > 60 {
		t.Errorf("ERROR body %q: want the rest of the 1m ban (50-60 s)", f.Body)
	}
	expectClosed(t, c)

	bob := dialFrom(t, bases[0], "10.8.0.11")
	bob.Send(connectFrame(signToken(t, secret, "bob")))
	if f := bob.Read(); f.Command != "CONNECTED" {
		t.Fatalf("bob from the same address: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	var counted, bans float64
	for _, b := range bases {
		m := scrape(t, b)
		counted += m.sum("stompgate_reconnect_connects_total", `scope="principal"`, `store="redis"`)
		bans += m.sum("stompgate_reconnect_bans_total", `scope="principal"`)
	}
	// alice's four counted CONNECTs and bob's; alice's fifth was refused
	// before the count, by the ban.
	if counted != reconnectLimit+2 || bans != 1 {
		t.Errorf("principal CONNECTs counted in Redis %v, principal bans %v; want %d and 1", counted, bans, reconnectLimit+2)
	}
}

// TestReconnectLoopVictimNotBanned: a client that names alice without
// her token, from many addresses and many times over the limit (as
// login with no passcode: an anonymous session; or with a forged token:
// refused), does not get alice banned: her own CONNECT passes.
func TestReconnectLoopVictimNotBanned(t *testing.T) {
	const secret = "e2e secret for reconnect loops, 32+ bytes"
	base, _ := startApp(t, append([]string{"-jwt-secret", secret}, reconnectArgs...)...)
	for i := range 2 * reconnectLimit {
		c := dialFrom(t, base, fmt.Sprintf("10.7.0.%d", i+1))
		c.Send("CONNECT\naccept-version:1.2\nhost:e2e\nlogin:alice\n\n\x00")
		if f := c.Read(); f.Command != "CONNECTED" || f.Get("user-name") == "alice" {
			t.Fatalf("CONNECT naming alice without a token: got %s %v, want CONNECTED as an anonymous session", f.Command, f.Headers)
		}
		forged := dialFrom(t, base, fmt.Sprintf("10.7.1.%d", i+1))
		forged.Send(connectFrame(signToken(t, "another secret that is not the server's", "alice")))
		if f := forged.Read(); f.Command != "ERROR" || f.Get("message") != "invalid credentials" {
			t.Fatalf("CONNECT with a forged token for alice: got %s %v, want ERROR \"invalid credentials\"", f.Command, f.Headers)
		}
	}
	c := dialFrom(t, base, "10.7.2.1")
	c.Send(connectFrame(signToken(t, secret, "alice")))
	if f := c.Read(); f.Command != "CONNECTED" || f.Get("user-name") != "alice" {
		t.Fatalf("alice with her token: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	m := scrape(t, base)
	if got := m.sum("stompgate_reconnect_bans_total"); got != 0 {
		t.Errorf("reconnect bans: %v, want 0", got)
	}
	if got := m.sum("stompgate_reconnect_connects_total", `scope="principal"`); got != 1 {
		t.Errorf("principal CONNECTs counted: %v, want 1 (alice's own)", got)
	}
}

// TestReconnectLoopRedisDown: with Redis stopped the counter falls back
// to this instance's memory, which still holds the CONNECTs counted
// before, and still bans the address here: the CONNECT over the limit is
// refused and the next handshake gets 429 with the ban's Retry-After.
// With Redis back, it leaves fallback mode.
func TestReconnectLoopRedisDown(t *testing.T) {
	rs := testredis.Start(t)
	base, _ := startApp(t, append([]string{"-redis-url", rs.URL(), "-redis-timeout", "2s"}, reconnectArgs...)...)
	const ip = "10.6.0.1"
	n := 0
	connect := func(want string) {
		t.Helper()
		n++
		c := dialFrom(t, base, ip)
		c.Send("CONNECT\naccept-version:1.2\nhost:e2e\n\n\x00")
		if f := c.Read(); f.Command != want {
			t.Fatalf("CONNECT %d: got %s %v %q, want %s", n, f.Command, f.Headers, f.Body, want)
		}
	}
	connect("CONNECTED")
	if got := scrape(t, base).sum("stompgate_reconnect_connects_total", `scope="address"`, `store="redis"`); got != 1 {
		t.Fatalf("address CONNECTs counted in Redis: %v, want 1", got)
	}
	rs.Kill()
	for range reconnectLimit - 1 {
		connect("CONNECTED")
	}
	connect("ERROR")
	_, resp, err := dialHeader(t, wsURL(base), ip)
	retryAfterAboutBan(t, resp, err)
	m := scrape(t, base)
	if got := m["stompgate_reconnect_fallback"]; got != 1 {
		t.Errorf("stompgate_reconnect_fallback = %v, want 1 with Redis stopped", got)
	}
	if got := m.sum("stompgate_reconnect_connects_total", `scope="address"`, `store="memory"`); got != reconnectLimit {
		t.Errorf("address CONNECTs counted in memory: %v, want %d", got, reconnectLimit)
	}
	if got := m.sum("stompgate_reconnect_store_errors_total"); got < 1 {
		t.Errorf("reconnect store errors: %v, want at least 1", got)
	}
	if got := m.sum("stompgate_reconnect_bans_total", `scope="address"`); got != 1 {
		t.Errorf("address bans: %v, want 1", got)
	}

	// Redis back: the counter's probe leaves fallback mode with no
	// CONNECT needed (and the clients' dial loops end).
	rs.Restart()
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)["stompgate_reconnect_fallback"]; got != 0 {
			return fmt.Errorf("stompgate_reconnect_fallback = %v after Redis came back, want 0", got)
		}
		return nil
	})
}

// TestReconnectSettingErrors: each bad reconnect setting stops start-up
// with an error naming it; -reconnect-limit 0 turns the limit off.
func TestReconnectSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"negative reconnect limit", []string{"-reconnect-limit", "-1"}, nil, "-reconnect-limit"},
		{"zero reconnect window", []string{"-reconnect-window", "0s"}, nil, "-reconnect-window"},
		{"zero reconnect ban", []string{"-reconnect-ban", "0s"}, nil, "-reconnect-ban"},
		{"reconnect ban not a duration in env", nil, map[string]string{"WSSERVER_RECONNECT_BAN": "long"}, "WSSERVER_RECONNECT_BAN"},
	})
	expectStarts(t, "-reconnect-limit", "0")
}
