package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/internal/testproc"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/nginx"
	"github.com/stompgate/stompgate/policy"
	"github.com/stompgate/stompgate/sessioncap"
)

// capPolicy caps each client IP at capMax open sessions, with a
// handshake rate far above what the tests send, so that only the cap
// refuses.
const capPolicy = `zones:
  - name: ws_handshake
    rate: 100r/s
    burst: 50
    max_connections: 3
    routes:
      - {method: GET, path: /ws, upstream: ws}
`

// capMax is capPolicy's max_connections.
const capMax = 3

// childArgsEnv, when set in the environment of the test binary, makes it
// run wsserver with the JSON-encoded arguments instead of the tests: the
// tests start a real wsserver process this way, to kill it.
const childArgsEnv = "STOMPGATE_E2E_WSSERVER_ARGS"

func init() {
	raw := os.Getenv(childArgsEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, "wsserver child:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), args, func(string) string { return "" }, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wsserver child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// capPolicyFile writes capPolicy to a file for -policy.
func capPolicyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "caps.yaml")
	if err := os.WriteFile(path, []byte(capPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startChild runs wsserver as a process of its own (the test binary in
// child mode) with args and a free -addr, waits until /readyz answers, and
// returns its base URL and the process, killed when the test ends.
func startChild(t *testing.T, args ...string) (string, *testproc.Process) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	adminAddr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	raw, err := json.Marshal(append([]string{"-addr", addr, "-admin-addr", adminAddr, "-log-level", "warn"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(raw))
	proc, err := testproc.Start(cmd)
	if err != nil {
		t.Fatalf("starting a wsserver process: %v", err)
	}
	t.Cleanup(proc.Kill)
	base := "http://" + addr
	registerAdmin(t, base, "http://"+adminAddr)
	err = proc.WaitReady(clientTimeout, func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("wsserver process on %s not ready: %v\n%s", addr, err, proc.Output())
	}
	return base, proc
}

// wantCapRefusal fails the test unless the handshake from ip to base is
// refused by the server's session cap: 429, Retry-After 2 or 3 (the
// policy's 2 s and its jitter), its text.
func wantCapRefusal(t *testing.T, base, ip string) {
	t.Helper()
	_, resp, err := dialHeader(t, wsURL(base), ip)
	if err == nil {
		t.Fatalf("handshake from %s to %s: accepted, want 429 at the cap of %d", ip, base, capMax)
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake from %s to %s: %v (%s), want 429", ip, base, err, describe(resp))
	}
	least := int(policy.CapRetryAfter / time.Second)
	if got, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || got < least || got > least+1 {
		t.Errorf("Retry-After %q, want %d or %d", resp.Header.Get("Retry-After"), least, least+1)
	}
	if body := readBody(resp); !strings.Contains(body, "too many open sessions") {
		t.Errorf("429 body %q, want the session cap's", body)
	}
}

// TestSessionCapAcrossInstances: three instances on one real Redis share
// each client IP's cap. The address's sessions, spread over the
// instances, stop at capMax, whichever instance the next handshake
// reaches; another address is not affected; a session that ends gives its
// slot back to every instance.
func TestSessionCapAcrossInstances(t *testing.T) {
	rs := testredis.Start(t)
	pol := capPolicyFile(t)
	var bases []string
	for range 3 {
		base, _ := startApp(t, "-policy", pol, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s")
		bases = append(bases, base)
	}
	const ip = "203.0.113.7"
	var clients []*frameClient
	for i := range capMax {
		c := dialFrom(t, bases[i], ip)
		c.Send(connectFrame(""))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("session %d: got %s %v, want CONNECTED", i+1, f.Command, f.Headers)
		}
		clients = append(clients, c)
	}
	for _, base := range bases {
		wantCapRefusal(t, base, ip)
	}
	dialFrom(t, bases[0], "203.0.113.8") // another address: its own slots

	// The session on instance B ends; instance C admits the address again.
	clients[1].Send("DISCONNECT\nreceipt:bye\n\n\x00")
	if f := clients[1].Read(); f.Command != "RECEIPT" {
		t.Fatalf("DISCONNECT: got %s, want RECEIPT", f.Command)
	}
	waitFor(t, clientTimeout, func() error {
		ws, resp, err := dialHeader(t, wsURL(bases[2]), ip)
		if err != nil {
			return fmt.Errorf("after a DISCONNECT: %v (%s)", err, describe(resp))
		}
		_ = ws.CloseNow()
		return nil
	})

	var refused float64
	for _, base := range bases {
		refused += scrape(t, base)[`stompgate_handshakes_total{result="rejected_session_cap"}`]
	}
	if refused < 3 {
		t.Errorf("handshakes counted rejected_session_cap: %v, want at least 3", refused)
	}
}

// TestSessionCapKilledInstance: a wsserver process holding an address's
// sessions is killed (SIGKILL: no release, no renewal). Another instance
// refuses the address while the dead leases live, and admits it again
// within the lease TTL, the documented bound on a dead instance's slots.
func TestSessionCapKilledInstance(t *testing.T) {
	rs := testredis.Start(t)
	pol := capPolicyFile(t)
	const ttl = time.Second
	args := []string{"-policy", pol, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-session-lease-ttl", ttl.String(), "-redis-timeout", "2s"}
	child, proc := startChild(t, args...)
	live, _ := startApp(t, args...)

	const ip = "203.0.113.9"
	for i := range capMax {
		c := dialFrom(t, child, ip)
		c.Send(connectFrame(""))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("session %d on the process: got %s, want CONNECTED", i+1, f.Command)
		}
	}
	// Held past several renewals: the leases outlive their first TTL. (A
	// state that must last cannot be polled for; the loop samples it.)
	deadline := time.Now().Add(2 * ttl)
	for time.Now().Before(deadline) {
		wantCapRefusal(t, live, ip)
		time.Sleep(ttl / 4)
	}

	proc.Kill()
	killed := time.Now()
	// The bound is the lease TTL; the poll allows a loaded machine ten.
	waitFor(t, 10*ttl, func() error {
		ws, resp, err := dialHeader(t, wsURL(live), ip)
		if err != nil {
			return fmt.Errorf("after the kill: %v (%s)", err, describe(resp))
		}
		_ = ws.CloseNow()
		return nil
	})
	t.Logf("slots of the killed instance came back %v after the kill (lease TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
}

// TestPrincipalSessionCap: -max-sessions-per-principal 2 on two
// instances sharing Redis, without displacement. A principal's sessions
// on both count together; the third CONNECT, from another address, is
// refused with ERROR "too many sessions" and closed as session_cap;
// another principal connects; once one session ends the principal
// connects again.
func TestPrincipalSessionCap(t *testing.T) {
	const secret = "e2e secret for session caps, 32+ bytes"
	rs := testredis.Start(t)
	var bases []string
	for range 2 {
		base, _ := startApp(t, "-redis-url", rs.URL(), "-jwt-secret", secret,
			"-max-sessions-per-principal", "2", "-session-cap-displace=false", "-trusted-proxies", "127.0.0.1/32",
			// Under -race on a loaded machine a Redis call can take longer
			// than the 50 ms default, and the caps would then count per
			// instance (fail open) for a second.
			"-redis-timeout", "2s")
		bases = append(bases, base)
	}
	alice := signToken(t, secret, "alice")
	connect := func(base, ip, token string) *frameClient {
		t.Helper()
		c := dialFrom(t, base, ip)
		c.Send(connectFrame(token))
		return c
	}
	a1 := connect(bases[0], "10.2.0.1", alice)
	if f := a1.Read(); f.Command != "CONNECTED" {
		t.Fatalf("alice on A: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	a2 := connect(bases[1], "10.2.0.2", alice)
	if f := a2.Read(); f.Command != "CONNECTED" {
		t.Fatalf("alice on B: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	a3 := connect(bases[0], "10.2.0.3", alice)
	f := a3.Read()
	if f.Command != "ERROR" || f.Get("message") != "too many sessions" {
		t.Fatalf("alice's third session: got %s %v, want ERROR \"too many sessions\"", f.Command, f.Headers)
	}
	if !strings.Contains(string(f.Body), "2 open sessions") {
		t.Errorf("ERROR body %q does not say the cap", f.Body)
	}
	expectClosed(t, a3)
	if f := connect(bases[0], "10.2.0.3", signToken(t, secret, "bob")).Read(); f.Command != "CONNECTED" {
		t.Fatalf("bob: got %s %v, want CONNECTED", f.Command, f.Headers)
	}

	a2.Send("DISCONNECT\nreceipt:bye\n\n\x00")
	if f := a2.Read(); f.Command != "RECEIPT" {
		t.Fatalf("DISCONNECT: got %s, want RECEIPT", f.Command)
	}
	waitFor(t, clientTimeout, func() error {
		m := scrape(t, bases[1])
		if got := m[`stompgate_session_cap_leases{scope="principal"}`]; got != 0 {
			return fmt.Errorf("instance B holds %v principal slots, want 0 after the DISCONNECT", got)
		}
		return nil
	})
	if f := connect(bases[0], "10.2.0.4", alice).Read(); f.Command != "CONNECTED" {
		t.Fatalf("alice after a DISCONNECT: got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, bases[0])[`stompgate_sessions_closed_total{reason="session_cap"}`]; got != 1 {
			return fmt.Errorf("sessions closed for session_cap on A: %v, want 1", got)
		}
		return nil
	})
}

// TestPrincipalSessionCapDisplaces runs the leaked-token attack for
// real: someone holding alice's token keeps her cap of 2 full with
// silent sessions on two instances sharing Redis. alice's own CONNECT
// still gets in, ending the oldest of them (on the other instance, over
// the disconnect channel) with ERROR; her next one ends the next oldest
// (on its own instance). Redis never holds more than 2 of her leases.
func TestPrincipalSessionCapDisplaces(t *testing.T) {
	const secret = "e2e secret for session caps, 32+ bytes"
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	var bases []string
	for range 2 {
		base, _ := startApp(t, "-redis-url", rs.URL(), "-jwt-secret", secret,
			"-max-sessions-per-principal", "2", "-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s")
		bases = append(bases, base)
	}
	alice := signToken(t, secret, "alice")
	connect := func(base, ip string) *frameClient {
		t.Helper()
		c := dialFrom(t, base, ip)
		c.Send(connectFrame(alice))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("CONNECT on %s from %s: got %s %v %q, want CONNECTED", base, ip, f.Command, f.Headers, f.Body)
		}
		return c
	}
	displacedBy := func(c *frameClient) {
		t.Helper()
		f := c.Read()
		if f.Command != "ERROR" || !strings.Contains(string(f.Body), "newer session") {
			t.Fatalf("displaced session: got %s %v %q, want ERROR naming the newer session", f.Command, f.Headers, f.Body)
		}
		expectClosed(t, c)
	}
	leases := func() int64 {
		n, err := rdb.ZCard(context.Background(), "stompgate:cap:{principal:alice}").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	thief1 := connect(bases[1], "10.3.0.1") // the oldest, on B
	thief2 := connect(bases[0], "10.3.0.2")
	if n := leases(); n != 2 {
		t.Fatalf("Redis holds %d leases of alice, want 2", n)
	}
	owner := connect(bases[0], "10.4.0.1")
	displacedBy(thief1)
	if n := leases(); n != 2 {
		t.Fatalf("after the owner's CONNECT Redis holds %d leases of alice, want 2", n)
	}
	connect(bases[1], "10.4.0.2")
	displacedBy(thief2)
	owner.Send("SUBSCRIBE\nid:1\ndestination:/topic/x\nreceipt:r\n\n\x00")
	if f := owner.Read(); f.Command != "RECEIPT" {
		t.Fatalf("the owner's first session: got %s %v, want RECEIPT", f.Command, f.Headers)
	}
	waitFor(t, clientTimeout, func() error {
		var displaced, slots float64
		for _, b := range bases {
			m := scrape(t, b)
			displaced += m[`stompgate_session_cap_displaced_total{scope="principal"}`]
			slots += m[`stompgate_session_cap_leases{scope="principal"}`]
		}
		if displaced != 2 || slots != 2 {
			return fmt.Errorf("displaced %v, principal slots held %v; want 2 and 2", displaced, slots)
		}
		return nil
	})
	if n := leases(); n != 2 {
		t.Fatalf("at the end Redis holds %d leases of alice, want 2", n)
	}
}

// TestPrincipalSessionCapDisplacesAlone: one instance without Redis
// decides on its own count; at the cap the newest session takes the slot
// of the oldest, and the slots held stay at the cap.
func TestPrincipalSessionCapDisplacesAlone(t *testing.T) {
	const secret = "e2e secret for session caps, 32+ bytes"
	base, _ := startApp(t, "-jwt-secret", secret, "-max-sessions-per-principal", "2", "-trusted-proxies", "127.0.0.1/32")
	alice := signToken(t, secret, "alice")
	var sessions []*frameClient
	for i := range 4 {
		c := dialFrom(t, base, fmt.Sprintf("10.5.0.%d", i+1))
		c.Send(connectFrame(alice))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("session %d: got %s %v, want CONNECTED", i, f.Command, f.Headers)
		}
		sessions = append(sessions, c)
	}
	for _, c := range sessions[:2] {
		if f := c.Read(); f.Command != "ERROR" || !strings.Contains(string(f.Body), "newer session") {
			t.Fatalf("displaced session: got %s %v %q", f.Command, f.Headers, f.Body)
		}
		expectClosed(t, c)
	}
	waitFor(t, clientTimeout, func() error {
		m := scrape(t, base)
		if d, held := m[`stompgate_session_cap_displaced_total{scope="principal"}`], m[`stompgate_session_cap_leases{scope="principal"}`]; d != 2 || held != 2 {
			return fmt.Errorf("displaced %v, slots held %v; want 2 and 2", d, held)
		}
		return nil
	})
}

// TestSessionCapThroughNginx: a real nginx rendered from capPolicy in
// front of two instances refuses the (capMax+1)th WebSocket one address
// holds open with its own 429, before any instance sees it.
func TestSessionCapThroughNginx(t *testing.T) {
	rs := testredis.Start(t)
	pol := capPolicyFile(t)
	var hosts, bases []string
	for range 2 {
		base, _ := startApp(t, "-policy", pol, "-redis-url", rs.URL(), "-redis-timeout", "2s")
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		bases, hosts = append(bases, base), append(hosts, u.Host)
	}
	p, err := policy.Parse([]byte(capPolicy))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := nginx.Render(p, nginx.Config{
		Listen:       fmt.Sprintf("127.0.0.1:%d", testnginx.FreePort(t)),
		WSUpstreams:  hosts,
		APIUpstreams: hosts[:1],
		PIDFile:      "nginx.pid",
		ErrorLog:     "error.log",
		AccessLog:    "access.log",
		TempPath:     ".",
	})
	if err != nil {
		t.Fatalf("nginx.Render: %v", err)
	}
	ngx := testnginx.Start(t, conf)

	for range capMax {
		dialStomp(t, wsURL(ngx.URL))
	}
	_, resp, err := dialWS(t, wsURL(ngx.URL))
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("socket %d through nginx: %v (%s), want 429", capMax+1, err, describe(resp))
	}
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("nginx's 429: Retry-After %q, want \"2\", as the server's", got)
	}
	if body := readBody(resp); !strings.Contains(body, `"retry_after":2`) {
		t.Errorf("nginx's 429: body %q, want nginx's JSON with retry_after 2", body)
	}
	var accepted, refused float64
	for _, base := range bases {
		m := scrape(t, base)
		accepted += m[`stompgate_handshakes_total{result="accepted"}`]
		refused += m[`stompgate_handshakes_total{result="rejected_session_cap"}`]
	}
	if accepted != capMax || refused != 0 {
		t.Errorf("instances accepted %v and refused %v at the cap, want %d and 0: nginx refuses first", accepted, refused, capMax)
	}
}

// TestCapRetryAfterMatchesNginx: the server's refusal at a session cap
// announces no less than the Retry-After the rendered nginx limit_conn
// does (and at most a second more, its jitter), so a client meets the
// same answer whichever of them refuses it.
func TestCapRetryAfterMatchesNginx(t *testing.T) {
	t.Parallel()
	if sessioncap.DefaultRetryAfter != policy.CapRetryAfter {
		t.Errorf("sessioncap.DefaultRetryAfter = %v, want policy.CapRetryAfter %v", sessioncap.DefaultRetryAfter, policy.CapRetryAfter)
	}
}
