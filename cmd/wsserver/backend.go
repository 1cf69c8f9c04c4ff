package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/api"
	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/internal/redisclient"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// The backend's seams: app destinations appended to a Redis Stream
// (appstream) and the server API on the admin listener (api).

// backendSettings are the settings backendFlags registers.
type backendSettings struct {
	appPrefix       string
	appStream       string
	appStreamMaxLen int64
	appTimeout      time.Duration

	appRedisURL             string
	appStreamPrincipalBytes int64
	appStreamAddressBytes   int64
	appStreamTotalBytes     int64
	redisAllowEviction      bool
	apiKey                  string
	apiMaxBody              int
	apiMaxPageSize          int
}

// backendFlags registers the settings of app destinations and the server
// API.
func (s *settings) backendFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.appPrefix, "app-prefix", server.DefaultAppPrefix, "SENDs to destinations under this prefix go to the backend (the -app-stream), not to subscribers")
	fs.StringVar(&s.appStream, "app-stream", appstream.DefaultStream, "with -redis-url: the Redis Stream app messages are appended to; the backend reads it with a consumer group")
	fs.Int64Var(&s.appStreamMaxLen, "app-stream-maxlen", appstream.DefaultMaxLen, "most app messages waiting in the -app-stream for the backend to acknowledge them; beyond it app SENDs are refused with ERROR \"backend busy\" (nothing is trimmed unread)")
	fs.Int64Var(&s.appStreamPrincipalBytes, "app-stream-principal-bytes", appstream.DefaultMaxPrincipalBytes, "most bytes of app messages one principal may have waiting for the backend; beyond it its app SENDs are refused with ERROR \"backend busy\" (thousands of a real user's messages)")
	fs.Int64Var(&s.appStreamAddressBytes, "app-stream-address-bytes", appstream.DefaultMaxAddressBytes, "most bytes of app messages one client address may have waiting for the backend (anonymous sessions are each a principal: this holds a script opening many)")
	fs.Int64Var(&s.appStreamTotalBytes, "app-stream-total-bytes", appstream.DefaultMaxTotalBytes, "most bytes of app messages waiting for the backend from every sender together, so an unread stream never fills Redis")
	fs.StringVar(&s.appRedisURL, "app-redis-url", "", "Redis of the -app-stream, same forms as -redis-url (empty: -redis-url), so a backlog can never take the memory of the limiter's, caps' and bans' keys")
	fs.BoolVar(&s.redisAllowEviction, "redis-allow-eviction", false, "start even when -redis-url or -app-redis-url has a maxmemory-policy other than noeviction (or hides it): a full Redis may then evict bans, session leases and unread app messages")
	fs.DurationVar(&s.appTimeout, "app-timeout", server.DefaultAppTimeout, "bound on appending one app message; a slower or failed append ends the sender's session with ERROR \"backend unavailable\"")
	fs.StringVar(&s.apiKey, "api-key", "", "bearer token of the server API under /api/v1/ on the admin listener (empty: no API)")
	fs.IntVar(&s.apiMaxBody, "api-max-body", api.DefaultMaxBody, "largest message body the server API publishes, in bytes")
	fs.IntVar(&s.apiMaxPageSize, "api-max-page-size", api.DefaultMaxPageSize, "most sessions one GET /api/v1/sessions returns (its largest limit); a larger limit is refused with 400")
}

// validateBackend checks the settings backendFlags registers.
func (s *settings) validateBackend() error {
	if !strings.HasPrefix(s.appPrefix, "/") {
		return badSetting("app-prefix", s.appPrefix, `must start with "/"`)
	}
	if s.appStream == "" {
		return badSetting("app-stream", s.appStream, "must not be empty")
	}
	if s.appStreamMaxLen <= 0 {
		return badSetting("app-stream-maxlen", s.appStreamMaxLen, "must be positive")
	}
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"app-stream-principal-bytes", s.appStreamPrincipalBytes},
		{"app-stream-address-bytes", s.appStreamAddressBytes},
		{"app-stream-total-bytes", s.appStreamTotalBytes},
	} {
		if b.v <= 0 {
			return badSetting(b.name, b.v, "must be positive")
		}
		if b.v < int64(s.maxFrameSize) {
			return badSetting(b.name, b.v, fmt.Sprintf("must be at least -max-frame-size (%d): the largest SEND must fit", s.maxFrameSize))
		}
	}
	if s.appTimeout <= 0 {
		return badSetting("app-timeout", s.appTimeout, "must be positive")
	}
	if s.apiMaxBody <= 0 {
		return badSetting("api-max-body", s.apiMaxBody, "must be positive")
	}
	if s.apiMaxPageSize <= 0 {
		return badSetting("api-max-page-size", s.apiMaxPageSize, "must be positive")
	}
	if s.apiKey != "" && s.adminAddr == "" {
		return badSetting("api-key", "(set)", "needs the admin listener (-admin-addr)")
	}
	return nil
}

// evictionCheckTimeout bounds the start-up check of a Redis'
// maxmemory-policy: one CONFIG GET, so a generous bound that only a Redis
// in trouble reaches.
const evictionCheckTimeout = 5 * time.Second

// checkEviction refuses to start on a Redis that evicts keys when full
// (see redisclient.CheckNoEviction), unless -redis-allow-eviction. setting
// names the URL the client was made from. A Redis that cannot be reached
// is logged and does not stop start-up: the server serves without Redis
// too (-limiter-fail).
func checkEviction(c redis.UniversalClient, setting string, st *settings, logger *slog.Logger) error {
	if st.redisAllowEviction {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), evictionCheckTimeout)
	defer cancel()
	err := redisclient.CheckNoEviction(ctx, c)
	if errors.Is(err, redisclient.ErrEvictionUnchecked) {
		logger.Warn("Redis' maxmemory-policy not checked: Redis unreachable", "setting", "-"+setting, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("-%s (%s): %w; set Redis' maxmemory-policy to noeviction, or start with -redis-allow-eviction (%s)",
			setting, envName(setting), err, envName("redis-allow-eviction"))
	}
	return nil
}

// newAppHandler returns the server's AppHandler: the -app-stream in the
// -app-redis-url or, without one, the -redis-url; none without either
// (an app SEND then gets ERROR "no backend configured").
func (a *app) newAppHandler(st *settings, logger *slog.Logger) (server.AppHandler, error) {
	client := a.redis
	if st.appRedisURL != "" {
		c, err := redisclient.New(st.appRedisURL)
		if err != nil {
			return nil, fmt.Errorf("-app-redis-url (%s): %w", envName("app-redis-url"), err)
		}
		a.appRedis = c
		if err := checkEviction(c, "app-redis-url", st, logger); err != nil {
			return nil, err
		}
		client = c
	}
	if client == nil {
		return nil, nil
	}
	host, _ := os.Hostname()
	h, err := appstream.New(appstream.Config{
		Client:            client,
		Stream:            st.appStream,
		MaxLen:            st.appStreamMaxLen,
		MaxPrincipalBytes: st.appStreamPrincipalBytes,
		MaxAddressBytes:   st.appStreamAddressBytes,
		AddressKey:        func(ip netip.Addr) string { return clientip.Key(ip, st.ipv6Prefix) },
		MaxTotalBytes:     st.appStreamTotalBytes,
		Instance:          host,
	})
	if err != nil {
		return nil, fmt.Errorf("-app-stream settings: %w", err)
	}
	return h, nil
}

// The server API asks the other instances to end sessions through the
// disconnect channel.
var _ api.Others = (*relay.Disconnects)(nil)

// mountAPI serves the server API on the admin mux when -api-key is set.
func (a *app) mountAPI(mux *http.ServeMux, st *settings, logger *slog.Logger) error {
	if st.apiKey == "" {
		return nil
	}
	cfg := api.Config{Server: a.stomp, Key: st.apiKey, MaxBody: st.apiMaxBody,
		// A published message may carry as many headers as a client's
		// SEND may: -max-headers.
		MaxHeaders: st.maxHeaders, MaxPageSize: st.apiMaxPageSize, Instance: instanceName(st.addr),
		Observer: observer{a.metrics}, Logger: logger, Tracer: a.apiTracer()}
	if a.fanout != nil {
		cfg.Others = a.fanout
	}
	if a.presence != nil {
		cfg.Presence = a.presence.tracker
	}
	h, err := api.New(cfg)
	if err != nil {
		return err
	}
	mux.Handle("/api/v1/", h)
	return nil
}

// instanceName names this instance in the server API's session listing:
// the host name and the public listener's port, so that two instances on
// one host are told apart.
func instanceName(addr string) string {
	host, _ := os.Hostname()
	if _, port, err := net.SplitHostPort(addr); err == nil && port != "" {
		return host + ":" + port
	}
	return host
}
