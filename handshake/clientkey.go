package handshake

import (
	"context"
	"net/netip"
	"strings"
)

// DefaultIPv6Prefix is the default prefix length, in bits, by which limits
// key IPv6 clients. A /64 is the smallest network a site is given (SLAAC
// needs one, RFC 7421), so one host can pick any of 2^64 addresses in it:
// keyed by address, a single machine would get a fresh handshake burst, a
// fresh session cap and a clean ban record with each address it takes.
// Keyed by /64, it gets one of each, as one IPv4 address would. A home or
// an office is usually delegated a /56 or a /48; keying by those would
// put its neighbours in one bucket too, so /64 is the default.
const DefaultIPv6Prefix = 64

// ClientKey returns the key under which per-client limits (the handshake
// rate, the bans by address, the session caps) count the client at a:
//
//   - an IPv4 address is its own key ("192.0.2.1");
//   - an IPv4-mapped IPv6 address keys as the IPv4 address it maps;
//   - an IPv6 address keys as its prefix of ipv6Prefix bits, in netip's
//     form ("2001:db8:1:2::/64"), or as itself ("2001:db8::1") when
//     ipv6Prefix is 128;
//   - the zero Addr (a peer that is not an IP address) is "unknown".
//
// Zones are dropped: fe80::1%eth0 and fe80::1%eth1 are one client. An
// ipv6Prefix outside 1..128 keys an IPv6 address as itself; settings are
// checked with CheckIPv6Prefix before they get here.
func ClientKey(a netip.Addr, ipv6Prefix int) string {
	if !a.IsValid() {
		return unknownClientKey
	}
	a = a.Unmap().WithZone("")
	if a.Is4() || ipv6Prefix < 1 || ipv6Prefix >= 128 {
		return a.String()
	}
	p, err := a.Prefix(ipv6Prefix)
	if err != nil { // unreachable: a is IPv6 and 1 <= ipv6Prefix < 128
		return a.String()
	}
	return p.String()
}

// CheckIPv6Prefix reports whether bits is a usable IPv6 prefix length,
// 1 to 128; the error names the setting as field.
func CheckIPv6Prefix(field string, bits int) error {
	if bits < 1 || bits > 128 {
		return configErrorf("%s %d is not between 1 and 128", field, bits)
	}
	return nil
}

// ipv6PrefixOrDefault returns bits, or DefaultIPv6Prefix when bits is 0,
// and an error naming field when it is outside 0..128.
func ipv6PrefixOrDefault(field string, bits int) (int, error) {
	if bits == 0 {
		return DefaultIPv6Prefix, nil
	}
	return bits, CheckIPv6Prefix(field, bits)
}

// IsPrefixKey reports whether key is a ClientKey of an IPv6 address
// shortened to a prefix ("2001:db8::/64"), rather than an address or
// "unknown": a refusal of such a key may hold back addresses that never
// sent a request themselves. Metrics use it to count what prefix keying
// refuses.
func IsPrefixKey(key string) bool { return strings.IndexByte(key, '/') >= 0 }

// clientKeyKey is the context key for the client key.
type clientKeyKey struct{}

// withClientKey returns a copy of ctx carrying key.
func withClientKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, clientKeyKey{}, key)
}

// ClientKeyFrom returns the client key (see ClientKey) that Middleware
// put into the request's context, and whether there was one, so that the
// limits behind it count the client under the same key.
func ClientKeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(clientKeyKey{}).(string)
	return k, ok && k != ""
}
