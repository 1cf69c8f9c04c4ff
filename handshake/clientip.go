package handshake

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the address of the client that sent r.
//
// It is the peer address (r.RemoteAddr) unless the peer is in trusted, a
// reverse proxy such as nginx: then it is the X-Real-IP header if that
// holds an address, else the right-most X-Forwarded-For entry that is not
// itself a trusted proxy (entries to its left were written by the client
// and prove nothing). Headers from an untrusted peer are ignored, so a
// client cannot choose its own rate-limit key. IPv4-mapped IPv6 addresses
// are unmapped and zones dropped. The result is the zero Addr when
// RemoteAddr is not an IP address (for example a Unix socket).
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	if !peer.IsValid() || !contains(trusted, peer) {
		return peer
	}
	if a := parseAddr(strings.TrimSpace(r.Header.Get("X-Real-IP"))); a.IsValid() {
		return a
	}
	hops := r.Header.Values("X-Forwarded-For")
	// Several X-Forwarded-For lines form one list, in order.
	var leftmost netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		line := hops[i]
		for line != "" {
			var entry string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				entry, line = line[j+1:], line[:j]
			} else {
				entry, line = line, ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a := parseAddr(entry)
			if !a.IsValid() {
				// A trusted proxy wrote something that is not an
				// address (e.g. "unknown"): nothing left of it can
				// be trusted, so fall back to the peer.
				return peer
			}
			if !contains(trusted, a) {
				return a
			}
			leftmost = a
		}
	}
	if leftmost.IsValid() {
		// Every hop is a trusted proxy: the request started at one.
		return leftmost
	}
	return peer
}

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

// parseAddr parses "ip", "ip:port" or "[ip]:port", returning the zero Addr
// when s is none of those.
func parseAddr(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

func contains(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientIPKey is the context key for the client address.
type clientIPKey struct{}

// withClientIP returns a copy of ctx carrying a.
func withClientIP(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, clientIPKey{}, a)
}

// ClientIPFrom returns the client address that Middleware put into the
// request's context, and whether there was one.
func ClientIPFrom(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(clientIPKey{}).(netip.Addr)
	return a, ok && a.IsValid()
}
