package interceptor

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// Banner records a temporary ban that the handshake limiter honours. The
// handshake package's Limiter implements it; key is a client IP or
// "principal:<name>".
type Banner interface {
	Ban(ctx context.Context, key string, d time.Duration) error
}

// LimitConfig configures the LimitStage. The zero value limits SEND
// frames to 20 per 1 s fixed window per session and never escalates.
type LimitConfig struct {
	// Limit is the per-session limiter's configuration (algorithm, limit,
	// window); its zero value is the fixed window, 20 per 1 s.
	Limit sessionlimit.Config
	// Commands are the limited commands. Default: SEND only.
	Commands []string
	// EscalateAfter ends a session that has had this many frames dropped
	// within EscalateWindow, with one ERROR ("rate limit exceeded") and a
	// close. Zero (the default) never escalates; negative is an error.
	EscalateAfter int
	// EscalateWindow is the period over which drops are counted for
	// escalation. Default 10s.
	EscalateWindow time.Duration
	// BanFor, when positive, also bans the session's client IP and
	// principal for this long at escalation. Needs Banner. The handshake
	// limiter honours the IP ban; the PrincipalStage honours the
	// principal ban at CONNECT when its Bans is set. Default 0: no ban.
	BanFor time.Duration
	// Banner records bans; required when BanFor > 0.
	Banner Banner
	// BanKey returns the key under which the session's client IP is
	// banned: the key the handshake limiter checks it under, so an IPv6
	// client is banned with its whole prefix
	// (clientip.Key). Nil means the address itself.
	BanKey func(netip.Addr) string
	// Logger receives one line per escalation. Nil means slog.Default().
	Logger *slog.Logger
	// Rules are the destination rules the stage starts with: per-rule
	// limits and read-only destinations (see DestinationRule). Nil means
	// none: every frame counts against the session's one limiter, at the
	// cost of one atomic load per frame. SetRules replaces them.
	Rules *DestinationRules
	// Dropped, when set, is told of every n frames the stage stops
	// (dropped over a limit, or rejected), with the name of the rule that
	// applied, RuleDefault when none did, so that drops can be counted by
	// rule. It is called on the session's reader goroutine and must not
	// block. Nil means not told.
	Dropped func(rule string, n int)
}

// LimitStage drops limited frames over the session's limit silently: no
// ERROR, no RECEIPT, the session stays open. Answering every abusive frame
// would spend outbound capacity on the abuser. Its state lives in the
// Session, so sessions never contend with each other and no global map or
// lock sits on the per-frame path.
//
// With destination rules (LimitConfig.Rules, SetRules), a frame whose
// destination a rule with a limit of its own matches is counted by the
// session's limiter for that rule instead, and a SEND to a read-only
// rule's destination ends the session (see DestinationRule).
//
// A LimitStage is safe for concurrent use by many sessions.
type LimitStage struct {
	cfg     LimitConfig
	factory *sessionlimit.Factory
	limited [8]string // small fixed set; compared linearly, no map lookup
	nlim    int
	rules   atomic.Pointer[DestinationRules] // nil: no destination rules
}

var (
	_ Stage     = (*LimitStage)(nil)
	_ Committer = (*LimitStage)(nil)
)

// NewLimitStage validates cfg and returns the stage.
func NewLimitStage(cfg LimitConfig) (*LimitStage, error) {
	f, err := sessionlimit.NewFactory(cfg.Limit)
	if err != nil {
		return nil, err
	}
	if len(cfg.Commands) == 0 {
		cfg.Commands = []string{"SEND"}
	}
	st := &LimitStage{cfg: cfg, factory: f}
	if len(cfg.Commands) > len(st.limited) {
		return nil, configErrorf("Commands lists %d commands, at most %d", len(cfg.Commands), len(st.limited))
	}
	for _, c := range cfg.Commands {
		if !stompframe.IsClientCommand(c) {
			return nil, configErrorf("Commands: %q is not a STOMP client command", c)
		}
		st.limited[st.nlim] = c
		st.nlim++
	}
	switch {
	case cfg.EscalateAfter < 0:
		return nil, configErrorf("EscalateAfter %d is negative", cfg.EscalateAfter)
	case cfg.EscalateWindow < 0:
		return nil, configErrorf("EscalateWindow %v is negative", cfg.EscalateWindow)
	case cfg.BanFor < 0:
		return nil, configErrorf("BanFor %v is negative", cfg.BanFor)
	case cfg.BanFor > 0 && cfg.Banner == nil:
		return nil, configErrorf("BanFor is set but Banner is nil")
	}
	if cfg.EscalateWindow == 0 {
		st.cfg.EscalateWindow = 10 * time.Second
	}
	if cfg.Logger == nil {
		st.cfg.Logger = slog.Default()
	}
	st.rules.Store(cfg.Rules)
	return st, nil
}

func (st *LimitStage) limits(cmd string) bool {
	for _, c := range st.limited[:st.nlim] {
		if c == cmd {
			return true
		}
	}
	return false
}

// Handle counts limited frames against the session's limiter, or against
// the session's limiter for the destination rule the frame falls under
// when that rule has a limit of its own; it refuses a SEND to a read-only
// rule's destination. A SEND inside a transaction is not counted here but
// when its transaction commits (Commit), against the session's default
// limiter.
func (st *LimitStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	if t := st.rules.Load(); t != nil {
		if i := destinationRule(t, f); i >= 0 {
			return st.handleRule(t, i, s, f, now)
		}
	}
	if !st.limits(f.Command) || InTransaction(f) {
		return Continue()
	}
	if s.Limiter == nil {
		s.Limiter = st.factory.New()
	}
	if s.Limiter.AllowAt(now) {
		return Continue()
	}
	return st.overLimit(s, now, 1, RuleDefault)
}

// Commit charges a committing transaction's n SENDs to the session's
// limiter together: they all pass if they fit in what the limit allows at
// now, otherwise all are dropped (and count n times towards escalation).
// A transaction of more SENDs than the limit per window never commits.
// The SENDs count against the default limiter whatever their
// destinations' rules: a COMMIT names no destination, so a transaction
// never gets more than the default limit allows, nor a rule's own.
func (st *LimitStage) Commit(s *Session, n int, now time.Time) Result {
	if !st.limits(stompframe.CommandSend) {
		return Continue()
	}
	if s.Limiter == nil {
		s.Limiter = st.factory.New()
	}
	if s.Limiter.AllowNAt(now, n) {
		return Continue()
	}
	return st.overLimit(s, now, n, RuleDefault)
}

// overLimit answers n frames the limiter of rule refused: dropped, or the
// session rejected when they take it over the escalation threshold.
func (st *LimitStage) overLimit(s *Session, now time.Time, n int, rule string) Result {
	st.dropped(rule, n)
	if st.cfg.EscalateAfter > 0 && st.escalate(s, now, n) {
		st.ban(s)
		return RejectFrame(outcome.RejectAbuse, "rate limit exceeded",
			fmt.Sprintf("%d frames over the limit within %v", st.cfg.EscalateAfter, st.cfg.EscalateWindow))
	}
	return DropFrame(outcome.DropRateLimit)
}

// escalate counts n drops and reports whether the session crossed the
// escalation threshold.
func (st *LimitStage) escalate(s *Session, now time.Time, n int) bool {
	t := now.UnixNano()
	if s.abuseDrops == 0 || t-s.abuseStart >= int64(st.cfg.EscalateWindow) || t < s.abuseStart {
		s.abuseStart, s.abuseDrops = t, 0
	}
	s.abuseDrops += n
	return s.abuseDrops >= st.cfg.EscalateAfter
}

func (st *LimitStage) ban(s *Session) {
	st.cfg.Logger.Warn("session closed for rate limit abuse", "session", s.ID, "ip", s.RemoteIP.String(), "ban", st.cfg.BanFor)
	if st.cfg.BanFor <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	keys := make([]string, 0, 2)
	if s.RemoteIP.IsValid() {
		if st.cfg.BanKey != nil {
			keys = append(keys, st.cfg.BanKey(s.RemoteIP))
		} else {
			keys = append(keys, s.RemoteIP.String())
		}
	}
	if s.Principal != nil && !s.Principal.Anonymous {
		keys = append(keys, PrincipalBanKey(s.Principal.Name))
	}
	for _, k := range keys {
		if err := st.cfg.Banner.Ban(ctx, k, st.cfg.BanFor); err != nil {
			st.cfg.Logger.Error("recording ban failed", "key", k, "err", err)
		}
	}
}
