package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stompgate/stompgate/internal/httptimeout"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/server"
)

// Bounds on idle, slow and dead peers, each with the reason for its
// default. The HTTP ones bound plain requests and keep-alive connections;
// WebSocket sessions are bounded by heart-beats or pings instead (the
// session clears the HTTP deadlines when it takes the connection over).
const (
	// defaultHTTPReadHeaderTimeout bounds reading a request's headers: a
	// client that trickles them (slowloris) holds a connection and a
	// goroutine. A browser sends them in one packet.
	defaultHTTPReadHeaderTimeout = 10 * time.Second
	// defaultHTTPReadTimeout bounds reading a whole plain request,
	// headers and body: this server's requests (health probes, the demo
	// page, the WebSocket upgrade) have no body to speak of, so 30 s is
	// far above what a slow mobile link needs.
	defaultHTTPReadTimeout = 30 * time.Second
	// defaultHTTPIdleTimeout is how long a keep-alive connection may wait
	// for its next request. Longer than the 60 s idle timeout of common
	// proxies in front (nginx upstream keepalive_timeout, cloud load
	// balancers), so that the proxy closes first and never sends a
	// request on a connection the server is closing; short enough that
	// abandoned connections do not pile up.
	defaultHTTPIdleTimeout = 90 * time.Second
	// defaultHTTPMaxHeaderBytes bounds a request's header block. A
	// WebSocket upgrade with cookies is 1-2 KiB; 16 KiB is nginx's
	// default of two 8 KiB large_client_header_buffers lines with room to
	// spare, where Go's default of 1 MiB would let every connection make
	// the server hold a megabyte.
	defaultHTTPMaxHeaderBytes = 16 << 10
)

// peerFlags registers the settings that bound idle and dead peers.
func (s *settings) peerFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.httpReadHeaderTimeout, "http-read-header-timeout", defaultHTTPReadHeaderTimeout, "bound on reading an HTTP request's headers")
	fs.DurationVar(&s.httpReadTimeout, "http-read-timeout", defaultHTTPReadTimeout, "bound on reading a whole plain HTTP request (WebSocket sessions are not affected)")
	fs.DurationVar(&s.httpIdleTimeout, "http-idle-timeout", defaultHTTPIdleTimeout, "how long a keep-alive HTTP connection may wait for its next request")
	fs.IntVar(&s.httpMaxHeaderBytes, "http-max-header-bytes", defaultHTTPMaxHeaderBytes, "largest HTTP request header block in bytes (larger: 431)")
	fs.DurationVar(&s.pingInterval, "ping-interval", server.DefaultPingInterval, "WebSocket ping interval for sessions whose client sends no STOMP heart-beats (negative: never)")
	fs.DurationVar(&s.pingTimeout, "ping-timeout", server.DefaultPingTimeout, "how long a pinged session may take to answer before it is closed as ping_timeout")
}

// validatePeers checks the settings peerFlags registers.
func (s *settings) validatePeers() error {
	for _, c := range []struct {
		name string
		v    time.Duration
	}{
		{"http-read-header-timeout", s.httpReadHeaderTimeout},
		{"http-read-timeout", s.httpReadTimeout},
		{"http-idle-timeout", s.httpIdleTimeout},
		{"ping-timeout", s.pingTimeout},
	} {
		if c.v <= 0 {
			return badSetting(c.name, c.v, "must be positive")
		}
	}
	if s.pingInterval == 0 {
		// Zero would mean the server's default deep inside; say "never"
		// with a negative value instead.
		return badSetting("ping-interval", s.pingInterval, "must not be zero (negative: never ping)")
	}
	if s.httpMaxHeaderBytes < 1 {
		return badSetting("http-max-header-bytes", s.httpMaxHeaderBytes, "must be positive")
	}
	return nil
}

// newHTTPServer returns a listener's server, public or admin, with the
// settings' bounds on slow, idle and oversized requests.
func newHTTPServer(st *settings, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: st.httpReadHeaderTimeout,
		ReadTimeout:       st.httpReadTimeout,
		IdleTimeout:       st.httpIdleTimeout,
		MaxHeaderBytes:    st.httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// badSetting is validate's error for one setting, naming its flag and
// environment variable.
func badSetting(name string, v any, why string) error {
	return fmt.Errorf("-%s (%s) %v: %s", name, envName(name), v, why)
}

// countTimeouts wraps ln so that hs counts the connections its timeouts
// close in stompgate_http_timeouts_total: idle for a keep-alive
// connection closed while waiting for its next request, read for one
// closed while a request came too slowly. It sets hs.ConnState.
func countTimeouts(ln net.Listener, hs *http.Server, m *metrics.Metrics) net.Listener {
	return httptimeout.Count(ln, hs, func(k httptimeout.Kind) {
		if k == httptimeout.Idle {
			m.HTTPTimedOut(metrics.HTTPTimeoutIdle)
		} else {
			m.HTTPTimedOut(metrics.HTTPTimeoutRead)
		}
	})
}
