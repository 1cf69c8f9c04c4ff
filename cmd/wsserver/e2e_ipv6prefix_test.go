package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/testredis"
)

// slowHandshakePolicy lets 5 handshakes through from rest (burst 4) and
// earns one back every 20 s, so nothing drains while a test runs.
const slowHandshakePolicy = `zones:
  - name: ws_handshake
    rate: 3r/m
    burst: 4
    routes:
      - {method: GET, path: /ws, upstream: ws}
`

// writePolicy writes a policy file for -policy.
func writePolicy(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantRefused fails the test unless a handshake from ip is refused 429.
func wantRefused(t *testing.T, base, ip, why string) {
	t.Helper()
	_, resp, err := dialHeader(t, wsURL(base), ip)
	if err == nil {
		t.Fatalf("handshake from %s: accepted, want 429 (%s)", ip, why)
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake from %s: %v (%s), want 429 (%s)", ip, err, describe(resp), why)
	}
}

// TestIPv6PrefixSharesHandshakeBurst: five addresses of one /64, told by
// a trusted proxy, share one handshake burst on a real server and Redis;
// a sixth address of the /64 is refused, an address of another /64 and
// IPv4 addresses are not, and the refusal is counted as the prefix's.
func TestIPv6PrefixSharesHandshakeBurst(t *testing.T) {
	rs := testredis.Start(t)
	base, _ := startApp(t, "-policy", writePolicy(t, slowHandshakePolicy), "-redis-url", rs.URL(),
		"-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s")
	for i := 1; i <= 5; i++ {
		ip := fmt.Sprintf("2001:db8:a:1::%x", i*0x1111)
		ws, resp, err := dialHeader(t, wsURL(base), ip)
		if err != nil {
			t.Fatalf("handshake %d from %s: %v (%s), want 101 within the /64's burst of 5", i, ip, err, describe(resp))
		}
		_ = ws.CloseNow()
	}
	wantRefused(t, base, "2001:db8:a:1:ffff:ffff:ffff:ffff", "the /64 spent its burst")
	for _, ip := range []string{"2001:db8:a:2::1", "192.0.2.1", "192.0.2.2", "::ffff:192.0.2.3"} {
		if _, resp, err := dialHeader(t, wsURL(base), ip); err != nil {
			t.Errorf("handshake from %s: %v (%s), want 101: a bucket of its own", ip, err, describe(resp))
		}
	}
	m := scrape(t, base)
	if got := m[`stompgate_ipv6_prefix_refusals_total{limit="handshake"}`]; got != 1 {
		t.Errorf("stompgate_ipv6_prefix_refusals_total{limit=\"handshake\"} = %v, want 1", got)
	}
	if got := m[`stompgate_handshakes_total{result="rejected_limit"}`]; got != 1 {
		t.Errorf("stompgate_handshakes_total{result=\"rejected_limit\"} = %v, want 1", got)
	}
}

// TestIPv6PrefixSharesSessionCap: addresses of one /64 share one session
// cap (capMax) on a real server and Redis, an address of another /64 has
// its own, and with -ipv6-prefix 128 each address has its own.
func TestIPv6PrefixSharesSessionCap(t *testing.T) {
	rs := testredis.Start(t)
	pol := capPolicyFile(t)
	base, _ := startApp(t, "-policy", pol, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s")
	for i := 1; i <= capMax; i++ {
		c := dialFrom(t, base, fmt.Sprintf("2001:db8:b:1::%d", i))
		c.Send(connectFrame(""))
		if f := c.Read(); f.Command != "CONNECTED" {
			t.Fatalf("session %d: got %s %v, want CONNECTED", i, f.Command, f.Headers)
		}
	}
	wantCapRefusal(t, base, "2001:db8:b:1:abcd::9")
	dialFrom(t, base, "2001:db8:b:2::1")
	if got := scrape(t, base)[`stompgate_ipv6_prefix_refusals_total{limit="session_cap"}`]; got != 1 {
		t.Errorf("stompgate_ipv6_prefix_refusals_total{limit=\"session_cap\"} = %v, want 1", got)
	}

	// -ipv6-prefix 128 restores keying by address.
	perAddr, _ := startApp(t, "-policy", pol, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s", "-ipv6-prefix", "128")
	for i := 1; i <= capMax+2; i++ {
		dialFrom(t, perAddr, fmt.Sprintf("2001:db8:c:1::%d", i))
	}
}

// TestIPv6PrefixBanCoversPrefix: a session closed for abuse bans its
// client's /64, so the next handshake from another address of it is
// refused as banned, while another /64 is admitted.
func TestIPv6PrefixBanCoversPrefix(t *testing.T) {
	rs := testredis.Start(t)
	base, _ := startApp(t, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s",
		"-send-limit", "2", "-send-window", "1s", "-abuse-drops", "5", "-abuse-window", "10s", "-abuse-ban", "1m")
	c := dialFrom(t, base, "2001:db8:d:1::1")
	c.Send(connectFrame(""))
	if f := c.Read(); f.Command != "CONNECTED" {
		t.Fatalf("got %s %v, want CONNECTED", f.Command, f.Headers)
	}
	c.Send(strings.Repeat("SEND\ndestination:/topic/e2e.abuse\n\nx\x00", 10))
	if f := c.Read(); f.Command != "ERROR" || f.Get("message") != "rate limit exceeded" {
		t.Fatalf("got %s %v, want ERROR with message \"rate limit exceeded\"", f.Command, f.Headers)
	}
	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)[`stompgate_sessions_closed_total{reason="rate_limit_abuse"}`]; got != 1 {
			return fmt.Errorf("sessions closed for rate_limit_abuse: %v, want 1", got)
		}
		return nil
	})
	wantRefused(t, base, "2001:db8:d:1:9::2", "the /64 is banned")
	if got := scrape(t, base)[`stompgate_handshakes_total{result="rejected_ban"}`]; got != 1 {
		t.Errorf("handshakes rejected_ban = %v, want 1", got)
	}
	dialFrom(t, base, "2001:db8:d:2::1")
}

// TestIPv6PrefixSetting: a prefix length outside 1..128 stops start-up
// with a message naming the setting.
func TestIPv6PrefixSetting(t *testing.T) {
	for _, v := range []string{"0", "129", "-1"} {
		var st settings
		if err := st.parse([]string{"-ipv6-prefix", v}, func(string) string { return "" }, nil); err != nil {
			t.Fatalf("parse -ipv6-prefix %s: %v", v, err)
		}
		err := st.validate()
		if err == nil || !strings.Contains(err.Error(), "-ipv6-prefix (WSSERVER_IPV6_PREFIX) "+v) {
			t.Errorf("validate with -ipv6-prefix %s = %v, want an error naming the setting", v, err)
		}
	}
}

// TestNginxConfigIPv6Prefix: nginx-config renders the prefix it is given
// (WSSERVER_IPV6_PREFIX, as the server reads it) and refuses one nginx
// cannot mirror with a message naming the setting.
func TestNginxConfigIPv6Prefix(t *testing.T) {
	var out strings.Builder
	env := func(k string) string {
		if k == "WSSERVER_IPV6_PREFIX" {
			return "48"
		}
		return ""
	}
	if err := runNginxConfig(nil, env, &out); err != nil {
		t.Fatalf("nginx-config with WSSERVER_IPV6_PREFIX=48: %v", err)
	}
	if want := `"$1:$2:$3::/48";`; !strings.Contains(out.String(), want) {
		t.Errorf("nginx-config with WSSERVER_IPV6_PREFIX=48 lacks %q", want)
	}
	err := runNginxConfig([]string{"-ipv6-prefix", "56"}, func(string) string { return "" }, &out)
	if err == nil || !strings.Contains(err.Error(), "-ipv6-prefix (WSSERVER_IPV6_PREFIX) 56") {
		t.Errorf("nginx-config -ipv6-prefix 56 = %v, want an error naming the setting", err)
	}
}
