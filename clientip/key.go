package clientip

import (
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

// unknownKey is the key of a client whose peer is not an IP address (a
// Unix socket without a trusted proxy in front): all such share one key.
const unknownKey = "unknown"

// Key returns the key under which per-client limits (the handshake
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
// checked with ValidIPv6Prefix before they get here.
func Key(a netip.Addr, ipv6Prefix int) string {
	if !a.IsValid() {
		return unknownKey
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

// ValidIPv6Prefix reports whether bits is a usable IPv6 prefix length,
// 1 to 128. Each package checks its own setting with it and names the
// setting in its own error.
func ValidIPv6Prefix(bits int) bool { return bits >= 1 && bits <= 128 }

// IsPrefixKey reports whether key is a Key of an IPv6 address
// shortened to a prefix ("2001:db8::/64"), rather than an address or
// "unknown": a refusal of such a key may hold back addresses that never
// sent a request themselves. Metrics use it to count what prefix keying
// refuses.
func IsPrefixKey(key string) bool { return strings.IndexByte(key, '/') >= 0 }
