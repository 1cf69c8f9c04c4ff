package nginx

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/policy"
)

// nginxPrefixes are the prefix lengths the client key map can mirror.
var nginxPrefixes = []int{16, 32, 48, 64, 80, 96, 112, 128}

// keyTestAddrs returns addresses in every shape the map must handle: the
// run of zeros that nginx writes as "::" at every position and of every
// length, in and across the prefix; IPv4, IPv4-mapped and the dotted
// forms; neighbours that share or split a prefix; and random ones.
func keyTestAddrs() []netip.Addr {
	var out []netip.Addr
	add := func(s string) { out = append(out, netip.MustParseAddr(s)) }
	for _, s := range []string{
		"192.0.2.1", "10.0.0.1", "::ffff:192.0.2.1", "::ffff:10.0.0.1",
		"::", "::1", "::2", "1::", "::1:0", "::ffff", "::ffff:0:1",
		"::192.0.2.1", "::0.0.1.2", "::0.1.0.0", "::255.255.0.1", "::1:2:3:4",
		"2001:db8::1", "2001:db8::2", "2001:db8:0:1::1", "2001:db8:1::1",
		"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:3::1",
		"fe80::1", "fe80::1:2:3:4", "ff02::1", "1:0:0:2::3", "1:0:0:2:0:0:0:3",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "1:2:3:4:5:6:7:8",
	} {
		add(s)
	}
	// Every run of zero groups: start s, length n, other groups 1..8 or
	// a value that differs only in one address of the pair.
	for s := range 8 {
		for n := 1; s+n <= 8; n++ {
			var g [8]uint16
			for i := range g {
				g[i] = uint16(i + 1)
			}
			for i := s; i < s+n; i++ {
				g[i] = 0
			}
			var b [16]byte
			for i, v := range g {
				b[2*i], b[2*i+1] = byte(v>>8), byte(v)
			}
			out = append(out, netip.AddrFrom16(b))
			b[15] ^= 0x40 // same /64 (and up to /112) unless the last group is the zero run
			out = append(out, netip.AddrFrom16(b))
		}
	}
	rng := rand.New(rand.NewPCG(6, 4))
	for range 300 {
		var b [16]byte
		for i := range b {
			// Mostly zero bytes, so that random addresses compress too.
			if rng.IntN(3) > 0 {
				b[i] = byte(rng.IntN(256))
			}
		}
		out = append(out, netip.AddrFrom16(b))
		c := b
		c[8+rng.IntN(8)] ^= byte(1 + rng.IntN(255)) // another address of the same /64
		out = append(out, netip.AddrFrom16(c))
	}
	return out
}

// agree checks that nginx's keys (got, by address) split addrs into the
// same groups as clientip.Key at bits: two addresses share an
// nginx key exactly when they share the wsserver's key.
func agree(t *testing.T, bits int, addrs []netip.Addr, got map[netip.Addr]string) {
	t.Helper()
	byGo := map[string]string{}    // wsserver key -> nginx key
	byNginx := map[string]string{} // nginx key -> wsserver key
	for _, a := range addrs {
		goKey, nk := clientip.Key(a, bits), got[a]
		if nk == "" {
			t.Errorf("/%d: no nginx key for %s", bits, a)
			continue
		}
		if prev, ok := byGo[goKey]; ok && prev != nk {
			t.Errorf("/%d: %s has wsserver key %s and nginx key %q, but another address of that key has nginx key %q", bits, a, goKey, nk, prev)
		}
		if prev, ok := byNginx[nk]; ok && prev != goKey {
			t.Errorf("/%d: %s has nginx key %q, shared with an address of wsserver key %s, but its own wsserver key is %s", bits, a, nk, prev, goKey)
		}
		byGo[goKey], byNginx[nk] = nk, goKey
	}
}

// evalRules evaluates the map as nginx does, in Go: the first rule that
// matches, with $n replaced by its capture, else $remote_addr.
func evalRules(rules []keyRule, compiled []*regexp.Regexp, addr string) string {
	for i, re := range compiled {
		m := re.FindStringSubmatch(addr)
		if m == nil {
			continue
		}
		v := rules[i].Value
		for n := len(m) - 1; n >= 1; n-- {
			v = strings.ReplaceAll(v, "$"+strconv.Itoa(n), m[n])
		}
		return v
	}
	return addr
}

// TestClientKeyRulesAgreeInGo evaluates the map's regular expressions
// with Go's regexp over many addresses in the compressed form both nginx
// and netip print, and checks they group addresses as the wsserver does.
func TestClientKeyRulesAgreeInGo(t *testing.T) {
	t.Parallel()
	addrs := keyTestAddrs()
	for _, bits := range nginxPrefixes {
		rules := clientKeyRules(bits)
		compiled := make([]*regexp.Regexp, len(rules))
		for i, r := range rules {
			compiled[i] = regexp.MustCompile(r.Regex)
		}
		got := map[netip.Addr]string{}
		for _, a := range addrs {
			got[a] = evalRules(rules, compiled, a.String())
			if a.Is6() && !a.Is4In6() && bits < 128 && got[a] == a.String() {
				t.Errorf("/%d: %s matched no rule: it would be keyed by address", bits, a)
			}
		}
		agree(t, bits, addrs, got)
	}
}

// TestIPv6PrefixRefused: prefix lengths the map cannot mirror are refused
// with a message naming the setting.
func TestIPv6PrefixRefused(t *testing.T) {
	t.Parallel()
	for _, bits := range []int{-16, 1, 56, 60, 129, 144} {
		_, err := Render(policy.Default(), Config{IPv6Prefix: bits})
		if err == nil || !strings.Contains(err.Error(), "IPv6Prefix "+strconv.Itoa(bits)+" cannot be mirrored") {
			t.Errorf("Render with IPv6Prefix %d = %v, want an error naming IPv6Prefix", bits, err)
		}
	}
	for _, bits := range nginxPrefixes {
		if _, err := Render(policy.Default(), Config{IPv6Prefix: bits}); err != nil {
			t.Errorf("Render with IPv6Prefix %d = %v", bits, err)
		}
	}
}

// realIPFromLoopback makes nginx take the client address from
// X-Forwarded-For when the peer is 127.0.0.1, as it would behind a load
// balancer: http-context directives added to a rendered file.
const realIPFromLoopback = "\nset_real_ip_from 127.0.0.1;\nreal_ip_header X-Forwarded-For;\n"

// getFrom sends GET url with X-Forwarded-For: ip and returns the status and
// body.
func getFrom(t *testing.T, url, ip string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", url, ip, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestNginxClientKeyAgrees asks a real nginx for $stompgate_client_key of
// many addresses (through a server added for the test that echoes it) at
// every prefix length it can mirror, and checks that nginx groups them as
// the wsserver does.
func TestNginxClientKeyAgrees(t *testing.T) {
	t.Parallel()
	addrs := keyTestAddrs()
	for _, bits := range nginxPrefixes {
		t.Run("/"+strconv.Itoa(bits), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(testnginx.FreePort(t), nil, nil)
			cfg.IPv6Prefix = bits
			conf, err := Render(policy.Default(), cfg)
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			echo := "127.0.0.1:" + strconv.Itoa(testnginx.FreePort(t))
			conf = append(conf, realIPFromLoopback+
				"server {\n    listen "+echo+";\n    access_log off;\n"+
				"    location / { return 200 \"$stompgate_client_key\"; }\n}\n"...)
			testnginx.Start(t, conf)
			poll.Until(t, testnginx.StartTimeout, func() error {
				c, err := net.DialTimeout("tcp", echo, time.Second)
				if err != nil {
					return err
				}
				return c.Close()
			})
			got := map[netip.Addr]string{}
			for _, a := range addrs {
				code, body := getFrom(t, "http://"+echo+"/", a.String(), nil)
				if code != http.StatusOK {
					t.Fatalf("key of %s: HTTP %d %q", a, code, body)
				}
				got[a] = body
			}
			agree(t, bits, addrs, got)
			if k := got[netip.MustParseAddr("::ffff:192.0.2.1")]; k != "192.0.2.1" {
				t.Errorf("nginx key of ::ffff:192.0.2.1 = %q, want 192.0.2.1", k)
			}
		})
	}
}

// TestNginxIPv6PrefixSharesBurst sends WebSocket handshakes through the
// rendered nginx from five addresses of one /64 (told by
// X-Forwarded-For from a trusted 127.0.0.1): they share one limit_req
// burst and the sixth address is refused, while another /64 and an IPv4
// address get bursts of their own.
func TestNginxIPv6PrefixSharesBurst(t *testing.T) {
	t.Parallel()
	ws := newRecorder(t)
	p := policy.Policy{Zones: []policy.Zone{{
		Name: policy.ZoneHandshake, Rate: 50, Burst: 4, // 3r/m: nothing drains during the test
		Routes: []policy.Route{{Method: "GET", Path: "/ws", Upstream: policy.UpstreamWS}},
	}}}
	conf, err := Render(p, testConfig(testnginx.FreePort(t), []string{ws.addr()}, nil))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, append(conf, realIPFromLoopback...))
	upgrade := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}
	for i := 1; i <= 5; i++ {
		ip := fmt.Sprintf("2001:db8:5:1:%x::%d", i, i)
		if code, body := getFrom(t, srv.URL+"/ws", ip, upgrade); code == http.StatusTooManyRequests {
			t.Fatalf("handshake %d from %s: 429 %q, want it passed within the /64's burst of 5", i, ip, body)
		}
	}
	if code, _ := getFrom(t, srv.URL+"/ws", "2001:db8:5:1::ffff", upgrade); code != http.StatusTooManyRequests {
		t.Errorf("sixth handshake from the /64, a new address: HTTP %d, want 429", code)
	}
	for _, ip := range []string{"2001:db8:5:2::1", "192.0.2.9"} {
		if code, body := getFrom(t, srv.URL+"/ws", ip, upgrade); code == http.StatusTooManyRequests {
			t.Errorf("handshake from %s: 429 %q, want a burst of its own", ip, body)
		}
	}
	ws.mu.Lock()
	n := len(ws.seen)
	ws.mu.Unlock()
	if n != 7 {
		t.Errorf("ws upstream got %d handshakes, want 7 (5 from the /64, 2 from others)", n)
	}
}
