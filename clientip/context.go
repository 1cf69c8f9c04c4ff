package clientip

import (
	"context"
	"net/netip"
)

// addrKey is the context key for the client address.
type addrKey struct{}

// WithAddr returns a copy of ctx carrying the client address a, for the
// limits behind the one that read it (AddrFrom).
func WithAddr(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, addrKey{}, a)
}

// AddrFrom returns the client address that WithAddr put into ctx
// (handshake.Middleware does, for each request it lets through), and
// whether there was a valid one.
func AddrFrom(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(addrKey{}).(netip.Addr)
	return a, ok && a.IsValid()
}

// keyKey is the context key for the client key.
type keyKey struct{}

// WithKey returns a copy of ctx carrying the client key (see Key), so
// that the limits behind the one that computed it count the client
// under the same key (KeyFrom).
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyKey{}, key)
}

// KeyFrom returns the client key that WithKey put into ctx
// (handshake.Middleware does, for each request it lets through), and
// whether there was one.
func KeyFrom(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyKey{}).(string)
	return k, ok && k != ""
}
