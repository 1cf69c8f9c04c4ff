package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/stompgate/stompgate/server"
)

// defaultDrainGrace is how long a draining instance keeps serving after
// /readyz turned 503, before it refuses new sessions: two or three health
// checks of a load balancer probing every few seconds, so that it has
// stopped sending clients here by then.
const defaultDrainGrace = 5 * time.Second

// drainFlags registers the lame-duck settings.
func (s *settings) drainFlags(fs *flag.FlagSet) {
	fs.DurationVar(&s.drainPeriod, "drain-period", 0, "on SIGTERM or SIGINT, close sessions one at a time spread over this period, after /readyz turned 503 and -drain-grace passed, so clients reconnect elsewhere gradually instead of all at once (0: close them all at once); then -shutdown-timeout applies")
	fs.DurationVar(&s.drainGrace, "drain-grace", defaultDrainGrace, "with -drain-period: how long /readyz answers 503 while sessions are still served, so load balancers stop sending clients here first")
}

// validateDrain checks the settings drainFlags registers.
func (s *settings) validateDrain() error {
	if s.drainPeriod < 0 {
		return badSetting("drain-period", s.drainPeriod, "must not be negative")
	}
	if s.drainGrace < 0 {
		return badSetting("drain-grace", s.drainGrace, "must not be negative")
	}
	return nil
}

// drain runs the lame-duck phase when -drain-period is set. It is bounded
// by the grace and the period (plus a second of slack); a second signal
// ends the process at once, as always.
func drain(srv *server.Server, st *settings, logger *slog.Logger) {
	if st.drainPeriod <= 0 {
		return
	}
	logger.Info("draining", "sessions", srv.Sessions(), "grace", st.drainGrace.String(), "period", st.drainPeriod.String())
	ctx, cancel := context.WithTimeout(context.Background(), st.drainGrace+st.drainPeriod+time.Second)
	defer cancel()
	if err := srv.Drain(ctx, st.drainGrace, st.drainPeriod); err != nil {
		logger.Warn("drain cut short", "err", err)
	}
}
