// Package clientip tells which client sent a request and under which key
// the per-client limits count it.
//
// FromRequest reads the client address: the peer, or what a trusted
// reverse proxy (nginx) says in X-Real-IP or X-Forwarded-For, never what
// an untrusted peer claims. Key turns an address into the key of the
// per-client limits (the handshake rate, the bans by address, the session
// caps): an IPv4 address as itself, an IPv6 address by its first
// DefaultIPv6Prefix bits, since one host holds a whole /64. The first
// limit in front (handshake.Middleware) puts both into the request's
// context (WithAddr, WithKey), so the limits behind it (sessioncap, the
// bans) count the same client under the same key (AddrFrom, KeyFrom).
//
// It builds on the standard library and internal/configerr alone, so
// that the adapters which key by client share it without importing each
// other.
package clientip

import (
	"net/http"
	"net/netip"
	"strings"
)

// FromRequest returns the address of the client that sent r.
//
// It is the peer address (r.RemoteAddr) unless the peer is in trusted, a
// reverse proxy such as nginx: then it is the X-Real-IP header if that
// holds an address, else the right-most X-Forwarded-For entry that is not
// itself a trusted proxy (entries to its left were written by the client
// and prove nothing). Headers from an untrusted peer are ignored, so a
// client cannot choose its own rate-limit key. IPv4-mapped IPv6 addresses
// are unmapped and zones dropped. The result is the zero Addr when
// RemoteAddr is not an IP address (for example a Unix socket).
func FromRequest(r *http.Request, trusted []netip.Prefix) netip.Addr {
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
