package principallimit

import (
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// StageConfig configures a Stage. Limiter is required.
type StageConfig struct {
	// Limiter decides.
	Limiter *Limiter
	// Commands are the commands counted. Nil or empty means SEND only.
	// Each must be a STOMP client command that names a destination
	// (SEND, SUBSCRIBE).
	Commands []string
	// LimitFor, if not nil, gives the limit of a frame to dest: the rule
	// that applies (its name, a bounded value: frames are counted apart
	// under each rule), its limit and window. ok false means the global
	// limit (Limiter's Config.Limit and Window); a limit of zero or less
	// means frames to dest are not limited per principal; a window of
	// zero or less means the global window. Nil: the global limit for
	// every destination. It is called on sessions' reader goroutines,
	// from many sessions at once.
	LimitFor func(dest string) (rule string, limit int, window time.Duration, ok bool)
}

// Stage drops the frames of a principal over its limit across every
// session and instance, silently (outcome.DropPrincipalLimit: no ERROR,
// no RECEIPT, the session stays open), like the per-session LimitStage
// it follows in the chain, so that frames that session limit drops are
// never charged here.
//
// Only principals the PrincipalStage verified are limited: an anonymous
// principal is a fresh name per session, so the per-session limit
// already holds it. A SEND inside a transaction is charged when its
// transaction commits (Commit), all together.
//
// A Stage is safe for concurrent use by many sessions.
type Stage struct {
	limiter  *Limiter
	limitFor func(dest string) (string, int, time.Duration, bool)
	commands []string
}

var (
	_ interceptor.Stage     = (*Stage)(nil)
	_ interceptor.Committer = (*Stage)(nil)
)

// NewStage returns a Stage configured by cfg.
func NewStage(cfg StageConfig) (*Stage, error) {
	if cfg.Limiter == nil {
		return nil, configErrorf("StageConfig.Limiter is nil")
	}
	cmds := cfg.Commands
	if len(cmds) == 0 {
		cmds = []string{stompframe.CommandSend}
	}
	for _, c := range cmds {
		if c != stompframe.CommandSend && c != stompframe.CommandSubscribe {
			return nil, configErrorf("StageConfig.Commands: %q names no destination; want SEND or SUBSCRIBE", c)
		}
	}
	return &Stage{limiter: cfg.Limiter, limitFor: cfg.LimitFor, commands: append([]string(nil), cmds...)}, nil
}

// Handle charges a counted frame of a verified principal and drops it
// when the principal is over its limit.
func (st *Stage) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	if !st.counts(f.Command) || interceptor.InTransaction(f) {
		return interceptor.Continue()
	}
	dest, _ := f.Lookup("destination")
	return st.charge(s, dest, 1, now)
}

// Commit charges a committing transaction's n SENDs together: they pass
// only if all fit. They are charged under the global limit: a
// transaction's SENDs may go to several destinations, and the stage does
// not keep them.
func (st *Stage) Commit(s *interceptor.Session, n int, now time.Time) interceptor.Result {
	if !st.counts(stompframe.CommandSend) {
		return interceptor.Continue()
	}
	return st.charge(s, "", n, now)
}

// charge asks the limiter about n frames of s to dest ("" for the
// global limit).
func (st *Stage) charge(s *interceptor.Session, dest string, n int, now time.Time) interceptor.Result {
	p := s.Principal
	if p == nil || p.Anonymous || p.Name == "" {
		return interceptor.Continue()
	}
	lim := st.limiter.Global()
	if st.limitFor != nil && dest != "" {
		if rule, limit, window, ok := st.limitFor(dest); ok {
			lim = Limit{Rule: rule, Limit: limit, Window: window}
		}
	}
	if st.limiter.AllowAt(now, p.Name, n, lim).Allowed {
		return interceptor.Continue()
	}
	return interceptor.DropFrame(outcome.DropPrincipalLimit)
}

// counts reports whether cmd is counted.
func (st *Stage) counts(cmd string) bool {
	for _, c := range st.commands {
		if c == cmd {
			return true
		}
	}
	return false
}
