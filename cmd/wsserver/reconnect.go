package main

import (
	"flag"
	"log/slog"
	"net/netip"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/reconnect"
)

// Reconnect loops: an address or a verified principal that completes
// more than -reconnect-limit CONNECTs per -reconnect-window is banned for
// -reconnect-ban, on every instance sharing -redis-url.

// reconnectSettings are the settings reconnectFlags registers.
type reconnectSettings struct {
	reconnectLimit  int
	reconnectWindow time.Duration
	reconnectBan    time.Duration
}

// reconnectFlags registers the reconnect-loop settings.
func (s *settings) reconnectFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.reconnectLimit, "reconnect-limit", reconnect.DefaultLimit, "most CONNECTs one client address (IPv6: its -ipv6-prefix) or one verified principal may complete per -reconnect-window, on all instances together; the one after is refused and the key banned for -reconnect-ban (0: no limit; EMQX's flapping detection counts the same 15 a minute)")
	fs.DurationVar(&s.reconnectWindow, "reconnect-window", reconnect.DefaultWindow, "window of -reconnect-limit, starting at a key's first CONNECT")
	fs.DurationVar(&s.reconnectBan, "reconnect-ban", reconnect.DefaultBan, "how long an address or principal over -reconnect-limit is banned: its handshakes are refused with 429 (an address) or its CONNECTs with ERROR \"banned\" (a principal)")
}

// validateReconnect checks the settings of reconnectFlags.
func (s *settings) validateReconnect() error {
	switch {
	case s.reconnectLimit < 0:
		return badSetting("reconnect-limit", s.reconnectLimit, "must not be negative (0 turns the limit off)")
	case s.reconnectWindow < time.Millisecond:
		return badSetting("reconnect-window", s.reconnectWindow, "must be at least 1ms")
	case s.reconnectBan <= 0:
		return badSetting("reconnect-ban", s.reconnectBan, "must be positive (-reconnect-limit 0 turns the limit off)")
	}
	return nil
}

// newReconnectStage builds the reconnect counter (in Redis when the app
// has a Redis client, in process memory otherwise) and its chain stage,
// which bans through the handshake limiter. It sets a.loops; it returns
// nil with -reconnect-limit 0.
func (a *app) newReconnectStage(st *settings, logger *slog.Logger) (interceptor.Stage, error) {
	if st.reconnectLimit == 0 {
		return nil, nil
	}
	cfg := reconnect.Config{
		Limit:          st.reconnectLimit,
		Window:         st.reconnectWindow,
		ConfirmTimeout: st.confirmTimeout(),
		Logger:         logger,
		Observer:       reconnectObserver{a.metrics},
	}
	if a.redis != nil {
		rs, err := reconnect.NewRedisStore(reconnect.RedisConfig{
			Client:         a.redis,
			Timeout:        st.redisTimeout,
			TimeoutsToFail: st.redisTimeoutsToFail,
		})
		if err != nil {
			return nil, err
		}
		cfg.Redis = rs
	}
	c, err := reconnect.New(cfg)
	if err != nil {
		return nil, err
	}
	a.loops = c
	return reconnect.NewStage(reconnect.StageConfig{
		Counter:    c,
		Banner:     a.limiter,
		BanFor:     st.reconnectBan,
		AddressKey: func(ip netip.Addr) string { return clientip.Key(ip, st.ipv6Prefix) },
	})
}

// reconnectObserver adapts metrics.Metrics to reconnect.Observer. The
// refusals are counted where the client sees them: a banned address's
// handshake as stompgate_handshakes_total{result="rejected_ban"}, the
// CONNECT that looped and a banned principal's as a session closed for
// rate_limit_abuse.
type reconnectObserver struct{ m *metrics.Metrics }

var _ reconnect.Observer = reconnectObserver{}

func (o reconnectObserver) Counted(scope, store string) {
	o.m.ReconnectCounted(metrics.ReconnectScopeOf(scope), store)
}
func (o reconnectObserver) Banned(scope string) { o.m.ReconnectBanned(metrics.ReconnectScopeOf(scope)) }
func (o reconnectObserver) StoreError(error)    { o.m.ReconnectStoreError() }
func (o reconnectObserver) Fallback(active bool) {
	o.m.SetReconnectFallback(active)
}
