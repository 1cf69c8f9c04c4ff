package clientip

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestFromRequest(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	tests := []struct {
		name    string
		remote  string
		realIP  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{name: "peer, no proxies trusted", remote: "192.0.2.1:5000", want: "192.0.2.1"},
		{name: "spoofed X-Forwarded-For from untrusted peer", remote: "192.0.2.1:5000", xff: []string{"198.51.100.7"}, trusted: trusted, want: "192.0.2.1"},
		{name: "spoofed X-Real-IP from untrusted peer", remote: "192.0.2.1:5000", realIP: "198.51.100.7", trusted: trusted, want: "192.0.2.1"},
		{name: "headers ignored when nothing is trusted", remote: "10.0.0.5:5000", realIP: "198.51.100.7", xff: []string{"198.51.100.8"}, want: "10.0.0.5"},
		{name: "X-Real-IP from trusted proxy", remote: "10.0.0.5:5000", realIP: "198.51.100.7", xff: []string{"198.51.100.8"}, trusted: trusted, want: "198.51.100.7"},
		{name: "bad X-Real-IP falls to X-Forwarded-For", remote: "10.0.0.5:5000", realIP: "nonsense", xff: []string{"198.51.100.8"}, trusted: trusted, want: "198.51.100.8"},
		{name: "right-most untrusted X-Forwarded-For entry", remote: "10.0.0.5:5000", xff: []string{"203.0.113.1, 198.51.100.8, 10.1.2.3"}, trusted: trusted, want: "198.51.100.8"},
		{name: "client-written entries left of the real one are ignored", remote: "10.0.0.5:5000", xff: []string{"1.1.1.1, 2.2.2.2, 198.51.100.8"}, trusted: trusted, want: "198.51.100.8"},
		{name: "several X-Forwarded-For lines", remote: "10.0.0.5:5000", xff: []string{"203.0.113.1", "198.51.100.8, 10.9.9.9"}, trusted: trusted, want: "198.51.100.8"},
		{name: "entry with port", remote: "10.0.0.5:5000", xff: []string{"198.51.100.8:4711"}, trusted: trusted, want: "198.51.100.8"},
		{name: "bracketed IPv6 entry", remote: "10.0.0.5:5000", xff: []string{"[2001:db8::1]"}, trusted: trusted, want: "2001:db8::1"},
		{name: "all hops trusted", remote: "10.0.0.5:5000", xff: []string{"10.3.3.3, 10.4.4.4"}, trusted: trusted, want: "10.3.3.3"},
		{name: "garbage hop stops the walk", remote: "10.0.0.5:5000", xff: []string{"198.51.100.8, unknown"}, trusted: trusted, want: "10.0.0.5"},
		{name: "trusted proxy without headers", remote: "10.0.0.5:5000", trusted: trusted, want: "10.0.0.5"},
		{name: "IPv6 peer", remote: "[2001:db8::2]:443", want: "2001:db8::2"},
		{name: "IPv6 trusted proxy", remote: "[2001:db8:ffff::1]:443", xff: []string{"2001:db8::9"}, trusted: trusted, want: "2001:db8::9"},
		{name: "IPv4-mapped peer is unmapped", remote: "[::ffff:192.0.2.3]:80", want: "192.0.2.3"},
		{name: "unix socket peer", remote: "@", want: "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/ws", nil)
			r.RemoteAddr = tt.remote
			if tt.realIP != "" {
				r.Header.Set("X-Real-IP", tt.realIP)
			}
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := FromRequest(r, tt.trusted).String(); got != tt.want {
				t.Errorf("FromRequest(remote %s, X-Real-IP %q, X-Forwarded-For %q) = %s, want %s", tt.remote, tt.realIP, tt.xff, got, tt.want)
			}
		})
	}
}
