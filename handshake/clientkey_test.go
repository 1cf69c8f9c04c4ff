package handshake

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientKey(t *testing.T) {
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
			if got := ClientKey(a, tt.bits); got != tt.want {
				t.Errorf("ClientKey(%s, %d) = %q, want %q", tt.addr, tt.bits, got, tt.want)
			}
		})
	}
}

// TestClientKeySharesPrefix checks the property the limits rely on: two
// addresses get one key exactly when they share the prefix.
func TestClientKeySharesPrefix(t *testing.T) {
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
		ka := ClientKey(netip.MustParseAddr(tt.a), tt.bits)
		kb := ClientKey(netip.MustParseAddr(tt.b), tt.bits)
		if (ka == kb) != tt.same {
			t.Errorf("/%d: ClientKey(%s) = %q, ClientKey(%s) = %q; same = %v, want %v", tt.bits, tt.a, ka, tt.b, kb, ka == kb, tt.same)
		}
	}
}

func TestCheckIPv6Prefix(t *testing.T) {
	for _, tt := range []struct {
		bits int
		ok   bool
	}{{-1, false}, {0, false}, {1, true}, {64, true}, {128, true}, {129, false}} {
		err := CheckIPv6Prefix("Config.IPv6Prefix", tt.bits)
		if (err == nil) != tt.ok {
			t.Errorf("CheckIPv6Prefix(%d) = %v, want ok %v", tt.bits, err, tt.ok)
		}
	}
	if _, err := Middleware(MiddlewareConfig{Limiter: &Limiter{}, Limit: Limit{Name: "z", Rate: 1000, Burst: 1}, IPv6Prefix: 129}, http.NotFoundHandler()); err == nil {
		t.Error("Middleware with IPv6Prefix 129 = nil error, want one naming the setting")
	} else if want := "handshake: MiddlewareConfig.IPv6Prefix 129 is not between 1 and 128"; err.Error() != want {
		t.Errorf("Middleware with IPv6Prefix 129 = %q, want %q", err, want)
	}
}

// TestMiddlewareKeysByPrefix sends handshakes from five addresses of one
// /64 and from another /64 through the middleware: the five share one
// burst, the other gets its own, and the key reaches the next handler.
func TestMiddlewareKeysByPrefix(t *testing.T) {
	mem, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := New(Config{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lim.Close() })
	var gotKey string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gotKey, _ = ClientKeyFrom(r.Context()) })
	refused := 0
	h, err := Middleware(MiddlewareConfig{
		Limiter:       lim,
		Limit:         Limit{Name: "ws_handshake", Rate: 1, Burst: 4}, // 1 per 1000 s: nothing drains during the test
		PrefixRefused: func() { refused++ },
	}, next)
	if err != nil {
		t.Fatal(err)
	}
	send := func(addr string) int {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = "[" + addr + "]:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3", "2001:db8:1:2::4", "2001:db8:1:2:ffff::5"} {
		if code := send(addr); code != http.StatusOK {
			t.Fatalf("handshake %d from %s = %d, want 200 (within the shared burst of 5)", i+1, addr, code)
		}
	}
	if gotKey != "2001:db8:1:2::/64" {
		t.Errorf("ClientKeyFrom in next = %q, want 2001:db8:1:2::/64", gotKey)
	}
	if code := send("2001:db8:1:2::6"); code != http.StatusTooManyRequests {
		t.Errorf("6th handshake from the /64 (a new address) = %d, want 429", code)
	}
	if refused != 1 {
		t.Errorf("PrefixRefused called %d times, want 1", refused)
	}
	if code := send("2001:db8:1:3::1"); code != http.StatusOK {
		t.Errorf("handshake from another /64 = %d, want 200", code)
	}
}
