package server

import "context"

type sessionEndKey struct{}

// OnSessionEnd returns a copy of ctx that makes the session started by a
// request carrying it call fn once when the session has ended, after its
// connection is closed. A request that does not become a session (a
// refused or failed upgrade, a server shutting down) calls fn before
// ServeHTTP returns. Middleware in front of the server uses it to hold a
// resource for exactly as long as a session lives, such as a slot in a
// per-client session cap. Several calls add up; the functions run in the
// order they were added.
func OnSessionEnd(ctx context.Context, fn func()) context.Context {
	prev, _ := ctx.Value(sessionEndKey{}).([]func())
	fns := make([]func(), 0, len(prev)+1)
	fns = append(append(fns, prev...), fn)
	return context.WithValue(ctx, sessionEndKey{}, fns)
}

// sessionEndFuncs returns what OnSessionEnd added to ctx.
func sessionEndFuncs(ctx context.Context) []func() {
	fns, _ := ctx.Value(sessionEndKey{}).([]func())
	return fns
}

// runAll calls every fn in order.
func runAll(fns []func()) {
	for _, fn := range fns {
		fn()
	}
}
