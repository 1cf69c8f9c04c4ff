package clientip

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct {
		name string
		addr string // "" is the zero Addr
		bits int
		want string
	}{
		{name: "IPv4", addr: "192.0.2.1", bits: 64, want: "192.0.2.1"},
		{name: "IPv4 ignores the prefix", addr: "192.0.2.1", bits: 16, want: "192.0.2.1"},
		{name: "IPv4-mapped keys as IPv4", addr: "::ffff:192.0.2.1", bits: 64, want: "192.0.2.1"},
		{name: "IPv4-mapped at /128", addr: "::ffff:192.0.2.1", bits: 128, want: "192.0.2.1"},
		{name: "zero Addr", addr: "", bits: 64, want: "unknown"},

		{name: "full form /64", addr: "2001:db8:1:2:3:4:5:6", bits: 64, want: "2001:db8:1:2::/64"},
		{name: "leading zeros /64", addr: "2001:0db8:0001:0002:0000:0000:0000:0001", bits: 64, want: "2001:db8:1:2::/64"},
		{name: ":: after the prefix", addr: "2001:db8:1:2::1", bits: 64, want: "2001:db8:1:2::/64"},
		{name: ":: inside the prefix", addr: "2001:db8::2:0:0:1", bits: 64, want: "2001:db8::/64"},
		{name: ":: across the prefix edge", addr: "2001:db8:1::5:6", bits: 64, want: "2001:db8:1::/64"},
		{name: ":: at the start", addr: "::1:2:3:4:5", bits: 64, want: "0:0:0:1::/64"},
		{name: "loopback", addr: "::1", bits: 64, want: "::/64"},
		{name: "unspecified", addr: "::", bits: 64, want: "::/64"},
		{name: ":: at the end", addr: "2001:db8:a:b::", bits: 64, want: "2001:db8:a:b::/64"},
		{name: "upper case", addr: "2001:DB8:A:B::C", bits: 64, want: "2001:db8:a:b::/64"},
		{name: "zone dropped", addr: "fe80::1:2%eth0", bits: 64, want: "fe80::/64"},
		{name: "IPv4-compatible stays IPv6", addr: "::192.0.2.1", bits: 64, want: "::/64"},
		{name: "dotted tail", addr: "2001:db8:1:2:3:4:192.0.2.1", bits: 64, want: "2001:db8:1:2::/64"},

		{name: "/48", addr: "2001:db8:1:2:3:4:5:6", bits: 48, want: "2001:db8:1::/48"},
		{name: "/48 same for another /64", addr: "2001:db8:1:ffff::9", bits: 48, want: "2001:db8:1::/48"},
		{name: "/56 keeps the top byte of the fourth group", addr: "2001:db8:1:2ff::1", bits: 56, want: "2001:db8:1:200::/56"},
		{name: "/56 below 256 in the fourth group", addr: "2001:db8:1:ff::1", bits: 56, want: "2001:db8:1::/56"},
		{name: "/60", addr: "2001:db8:1:abcd::1", bits: 60, want: "2001:db8:1:abc0::/60"},
		{name: "/128 is the address", addr: "2001:db8:1:2:3:4:5:6", bits: 128, want: "2001:db8:1:2:3:4:5:6"},
		{name: "/128 compressed", addr: "2001:0db8::0001", bits: 128, want: "2001:db8::1"},
		{name: "/1", addr: "ffff::1", bits: 1, want: "8000::/1"},
		{name: "out of range keys the address", addr: "2001:db8::1", bits: 0, want: "2001:db8::1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a netip.Addr
			if tt.addr != "" {
				a = netip.MustParseAddr(tt.addr)
			}
			if got := Key(a, tt.bits); got != tt.want {
				t.Errorf("Key(%s, %d) = %q, want %q", tt.addr, tt.bits, got, tt.want)
			}
		})
	}
}

// TestKeySharesPrefix checks the property the limits rely on: two
// addresses get one key exactly when they share the prefix.
func TestKeySharesPrefix(t *testing.T) {
	tests := []struct {
		a, b string
		bits int
		same bool
	}{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", 64, true},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", 64, false},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", 48, true},
		{"2001:db8:1:200::1", "2001:db8:1:2ff::1", 56, true},
		{"2001:db8:1:200::1", "2001:db8:1:300::1", 56, false},
		{"2001:db8::1", "2001:db8::2", 128, false},
		{"::ffff:192.0.2.1", "192.0.2.1", 64, true},
		{"192.0.2.1", "192.0.2.2", 64, false},
	}
	for _, tt := range tests {
		ka := Key(netip.MustParseAddr(tt.a), tt.bits)
		kb := Key(netip.MustParseAddr(tt.b), tt.bits)
		if (ka == kb) != tt.same {
			t.Errorf("/%d: Key(%s) = %q, Key(%s) = %q; same = %v, want %v", tt.bits, tt.a, ka, tt.b, kb, ka == kb, tt.same)
		}
	}
}

func TestValidIPv6Prefix(t *testing.T) {
	for _, tt := range []struct {
		bits int
		ok   bool
	}{{-1, false}, {0, false}, {1, true}, {64, true}, {128, true}, {129, false}} {
		if got := ValidIPv6Prefix(tt.bits); got != tt.ok {
			t.Errorf("ValidIPv6Prefix(%d) = %v, want %v", tt.bits, got, tt.ok)
		}
	}
}
