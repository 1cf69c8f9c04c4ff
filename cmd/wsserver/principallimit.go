package main

import (
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/metrics"
	"github.com/stompgate/stompgate/principallimit"
	"github.com/stompgate/stompgate/stompframe"
)

// The per-principal send limit: what one authenticated principal
// publishes in total, all its sessions on every instance sharing
// -redis-url (per instance without it).

// principalLimitSettings are the per-principal send limit's settings.
type principalLimitSettings struct {
	principalSendLimit      int
	principalSendWindow     time.Duration
	principalSendOptimistic int
	principalLimitEntries   int
}

// principalLimitFlags registers the per-principal send limit's settings.
func (s *settings) principalLimitFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.principalSendLimit, "principal-send-limit", principallimit.DefaultLimit, "SENDs (and the other -limited-commands that name a destination) one authenticated principal may publish per -principal-send-window, all its sessions on every instance sharing -redis-url together; excess frames are dropped silently (0: no limit; 60 is three tabs at -send-limit, while a real user peaks at 1.3/s)")
	fs.DurationVar(&s.principalSendWindow, "principal-send-window", principallimit.DefaultWindow, "fixed window of -principal-send-limit, by Redis' clock")
	fs.IntVar(&s.principalSendOptimistic, "principal-send-optimistic", 0, "frames of one principal an instance passes per window before Redis has counted them, so that a user below it costs no round trip; instances together overshoot -principal-send-limit by at most their number times it (0: a tenth of the limit, 6 of 60)")
	fs.IntVar(&s.principalLimitEntries, "principal-limit-entries", principallimit.DefaultMaxPrincipals, "most principals whose window the per-principal send limit holds in memory per instance (about 100 bytes each); past it a principal whose window ended makes room, else any one (counted in stompgate_principal_limit_evictions_total)")
}

// validatePrincipalLimit checks the settings principalLimitFlags
// registers.
func (s *settings) validatePrincipalLimit() error {
	switch {
	case s.principalSendLimit < 0:
		return badSetting("principal-send-limit", s.principalSendLimit, "must not be negative")
	case s.principalSendWindow <= 0:
		return badSetting("principal-send-window", s.principalSendWindow, "must be positive")
	case s.principalSendWindow < time.Millisecond:
		return badSetting("principal-send-window", s.principalSendWindow, "must be at least 1ms, the resolution of Redis' clock")
	case s.principalSendOptimistic < 0:
		return badSetting("principal-send-optimistic", s.principalSendOptimistic, "must not be negative")
	case s.principalLimitEntries < 1:
		return badSetting("principal-limit-entries", s.principalLimitEntries, "must be positive")
	}
	return nil
}

// newPrincipalLimit builds the per-principal send limit's Limiter: counts
// in Redis when the app has a Redis client, in process memory otherwise.
// It sets a.plimit, and leaves it nil with -principal-send-limit 0.
func (a *app) newPrincipalLimit(st *settings, logger *slog.Logger) error {
	if st.principalSendLimit == 0 {
		return nil
	}
	obs := principalLimitObserver{a.metrics}
	cfg := principallimit.Config{
		Limit:          st.principalSendLimit,
		Window:         st.principalSendWindow,
		Optimistic:     st.principalSendOptimistic,
		MaxPrincipals:  st.principalLimitEntries,
		ConfirmTimeout: st.confirmTimeout(),
		Logger:         logger,
		Observer:       obs,
	}
	if a.redis != nil {
		rs, err := principallimit.NewRedisStore(principallimit.RedisConfig{
			Client:         a.redis,
			Timeout:        st.redisTimeout,
			TimeoutsToFail: st.redisTimeoutsToFail,
		})
		if err != nil {
			return fmt.Errorf("-principal-send-limit: %w", err)
		}
		cfg.Redis = rs
	}
	l, err := principallimit.New(cfg)
	if err != nil {
		return fmt.Errorf("-principal-send-limit: %w", err)
	}
	a.plimit = l
	return nil
}

// principalLimitStage is the chain's stage of a.plimit, counting the
// -limited-commands that name a destination, with the per-destination
// limits of the policy's destination rules (a.rules, read on every
// frame, so a reload applies at once); nil without a limit or such
// commands.
func (a *app) principalLimitStage(st *settings) (interceptor.Stage, error) {
	if a.plimit == nil {
		return nil, nil
	}
	var cmds []string
	for _, c := range splitList(st.limitedCommands) {
		if c == stompframe.CommandSend || c == stompframe.CommandSubscribe {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	s, err := principallimit.NewStage(principallimit.StageConfig{Limiter: a.plimit, Commands: cmds, LimitFor: a.rules.PrincipalLimit})
	if err != nil {
		return nil, fmt.Errorf("-principal-send-limit: %w", err)
	}
	return s, nil
}

// closePrincipalLimit stops the limit's probe.
func (a *app) closePrincipalLimit() {
	if a.plimit != nil {
		_ = a.plimit.Close()
	}
}

// principalLimitObserver adapts metrics.Metrics to principallimit.Observer.
// Drops are counted by the chain's observer, under principal_limit.
type principalLimitObserver struct{ m *metrics.Metrics }

var _ principallimit.Observer = principalLimitObserver{}

func (o principalLimitObserver) Decision(d principallimit.Decision) {
	o.m.PrincipalLimitDecision(d.Allowed, d.Source)
}
func (o principalLimitObserver) RoundTrip()           { o.m.PrincipalLimitRoundTrip() }
func (o principalLimitObserver) StoreError(error)     { o.m.PrincipalLimitStoreError() }
func (o principalLimitObserver) Fallback(active bool) { o.m.SetPrincipalLimitFallback(active) }
func (o principalLimitObserver) Confirmation(ok bool) { o.m.PrincipalLimitConfirmation(ok) }
func (o principalLimitObserver) Evicted()             { o.m.PrincipalLimitEvicted() }
