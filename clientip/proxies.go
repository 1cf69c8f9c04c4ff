package clientip

import (
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses the -trusted-proxies setting: comma-separated
// CIDR prefixes or bare IP addresses (a bare address is a /32 or /128).
// Spaces around entries are ignored; an empty string trusts no proxy.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, configErrorf("trusted proxy %q: %v", f, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, configErrorf("trusted proxy %q: %v", f, err)
		}
		a = a.Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
