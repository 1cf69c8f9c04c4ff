package clientip_test

import (
	"fmt"
	"net/http/httptest"
	"net/netip"

	"github.com/stompgate/stompgate/clientip"
)

// A request that came through nginx at 10.0.0.5: the client is the
// address nginx names, keyed by its /64.
func ExampleFromRequest() {
	r := httptest.NewRequest("GET", "/ws", nil)
	r.RemoteAddr = "10.0.0.5:41000"
	r.Header.Set("X-Forwarded-For", "2001:db8:1:2::7")
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	ip := clientip.FromRequest(r, trusted)
	fmt.Println(ip, clientip.Key(ip, clientip.DefaultIPv6Prefix))
	// Without trusting the proxy, its headers prove nothing.
	fmt.Println(clientip.FromRequest(r, nil))
	// Output:
	// 2001:db8:1:2::7 2001:db8:1:2::/64
	// 10.0.0.5
}

// Parsing the -trusted-proxies setting.
func ExampleParseTrustedProxies() {
	p, err := clientip.ParseTrustedProxies("10.0.0.0/8, 192.0.2.10")
	fmt.Println(p, err)
	_, err = clientip.ParseTrustedProxies("10.0.0.0/40")
	fmt.Println(err)
	// Output:
	// [10.0.0.0/8 192.0.2.10/32] <nil>
	// clientip: trusted proxy "10.0.0.0/40": netip.ParsePrefix("10.0.0.0/40"): prefix length out of range
}
