package server

import (
	"net/netip"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

// BenchSendHandler returns, for benchmarks outside the package (which
// may import the adapters), BenchmarkHandleSend's session: connected,
// its credentials expiring in an hour from t0, and one subscriber of
// dest that keeps nothing. handle is the session's handleTraced (handle
// in its span, when the server has a Tracer); stop ends its expiry
// timer.
func BenchSendHandler(srv *Server, dest string, t0 time.Time) (handle func(*stompframe.Frame, time.Time) bool, stop func()) {
	s := newSession(srv, nil, netip.MustParseAddr("192.0.2.1"), nil)
	s.connected.Store(true)
	s.st.Principal = &interceptor.Principal{Name: "alice", Expires: t0.Add(time.Hour)}
	srv.cfg.Broker.Subscribe(broker.NewSubscription("0", dest, broker.AckAuto, stompframe.V12, discard{}))
	return s.handleTraced, func() {
		if s.expiry != nil {
			s.expiry.Stop()
		}
	}
}
