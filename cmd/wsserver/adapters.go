package main

// The seams between the core (server, interceptor) and the adapters this
// binary plugs into it. The core packages import none of the adapters;
// the checks that an adapter fits live here, where both are known.

import (
	"net/http"
	"net/netip"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// The relay is the server's Relay as well as the broker's Hooks.
var _ server.Relay = (*relay.Relay)(nil)

// clientIP is the server's Config.ClientIP: the client address the
// handshake middleware in front of the server found (after trusted-proxy
// processing), so a session's limits and bans key on the same address as
// the handshake limit.
func clientIP(r *http.Request) (netip.Addr, bool) {
	return clientip.AddrFrom(r.Context())
}
