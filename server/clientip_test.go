package server

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

// ipStage reports the RemoteIP each session has at CONNECT.
type ipStage chan netip.Addr

func (st ipStage) Handle(s *interceptor.Session, f *stompframe.Frame, _ time.Time) interceptor.Result {
	if f.Command == stompframe.CommandConnect {
		st <- s.RemoteIP
	}
	return interceptor.Continue()
}

// TestClientIP: the session's RemoteIP is what Config.ClientIP answers for
// the upgrade request, and the peer address when it has no answer.
func TestClientIP(t *testing.T) {
	loopback := netip.MustParseAddr("127.0.0.1")
	forwarded := netip.MustParseAddr("198.51.100.7")
	tests := []struct {
		name     string
		clientIP func(*http.Request) (netip.Addr, bool)
		want     netip.Addr
	}{
		{"nil: the peer address", nil, loopback},
		{"an answer", func(*http.Request) (netip.Addr, bool) { return forwarded, true }, forwarded},
		{"no answer: the peer address", func(*http.Request) (netip.Addr, bool) { return forwarded, false }, loopback},
		{"reads the upgrade request", func(r *http.Request) (netip.Addr, bool) {
			a, err := netip.ParseAddr(r.URL.Query().Get("ip"))
			return a, err == nil
		}, netip.MustParseAddr("2001:db8::1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(ipStage, 1)
			ts := startServer(t, Config{ClientIP: tt.clientIP, Chain: interceptor.NewChain(nil, seen)})
			c := dialRaw(t, ts.url+"?ip=2001:db8::1")
			c.Connect()
			if got := <-seen; got != tt.want {
				t.Errorf("Session.RemoteIP = %v, want %v", got, tt.want)
			}
		})
	}
}
