package reconnect

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// StageConfig configures a Stage. Counter and Banner are required.
type StageConfig struct {
	// Counter counts the CONNECTs.
	Counter *Counter
	// Banner records the bans: the handshake limiter, whose ban of an
	// address refuses its next handshake (429, Retry-After the rest of
	// the ban) before any token is checked, and whose ban of
	// interceptor.PrincipalBanKey(name) the PrincipalStage checks at
	// CONNECT (ERROR "banned").
	Banner interceptor.Banner
	// BanFor is how long a looping key is banned. Zero means DefaultBan;
	// negative is an error.
	BanFor time.Duration
	// AddressKey returns the key a client address is counted and banned
	// under: the key the handshake limiter checks it under, so that an
	// IPv6 client is held with its whole prefix (clientip.Key). Nil means
	// the address itself.
	AddressKey func(netip.Addr) string
}

// Stage counts the CONNECTs that reach it, per client address and, for
// verified principals only, per principal, and bans a key that completes
// more than Counter.Limit of them within Counter.Window for BanFor. Place
// it after interceptor.PrincipalStage and the per-principal session cap,
// so that only CONNECTs those accepted are counted (each session sends
// CONNECT once; the server refuses a second before the chain). The
// server sends CONNECTED after the chain, unless the CONNECT names no
// version it speaks or a malformed heart-beat, or its token expired
// meanwhile: such a CONNECT is counted all the same, as a loop of them is
// a loop too.
//
// The CONNECT that takes a key over the limit is itself refused (ERROR
// "banned", outcome.RejectBanned, closed as rate_limit_abuse) with the
// length of the ban in its body: the ban is in place by then, and letting
// the session in would hand the loop one more session. Its address's next
// handshake is refused with 429, its principal's next CONNECT with ERROR
// "banned", on every instance sharing the Banner's Redis.
//
// A principal is counted by name only when a token verified it: the
// PrincipalStage marks every other session Anonymous (a fresh name per
// session), so a client that names a victim without the victim's token
// never reaches the victim's count, and cannot get the victim banned.
// Its address is counted all the same.
//
// Counting and banning are spent on the session's reader goroutine before
// CONNECTED is sent: two counts and, rarely, a ban, each bounded by its
// store's timeout (50ms by default). A count Redis cannot make is made
// in memory (see Counter): counting never turns a slow Redis into a
// refusal, nor lets a loop through.
//
// A Stage is safe for concurrent use.
type Stage struct {
	counter *Counter
	banner  interceptor.Banner
	banFor  time.Duration
	addrKey func(netip.Addr) string
}

var _ interceptor.Stage = (*Stage)(nil)

// NewStage returns a Stage configured by cfg.
func NewStage(cfg StageConfig) (*Stage, error) {
	switch {
	case cfg.Counter == nil:
		return nil, configErrorf("StageConfig.Counter is nil")
	case cfg.Banner == nil:
		return nil, configErrorf("StageConfig.Banner is nil")
	case cfg.BanFor < 0:
		return nil, configErrorf("StageConfig.BanFor %v is negative", cfg.BanFor)
	}
	if cfg.BanFor == 0 {
		cfg.BanFor = DefaultBan
	}
	if cfg.AddressKey == nil {
		cfg.AddressKey = netip.Addr.String
	}
	return &Stage{counter: cfg.Counter, banner: cfg.Banner, banFor: cfg.BanFor, addrKey: cfg.AddressKey}, nil
}

// Handle counts a CONNECT (or STOMP) frame and passes every other frame.
func (st *Stage) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	if f.Command != stompframe.CommandConnect && f.Command != stompframe.CommandStomp {
		return interceptor.Continue()
	}
	// Every Redis call below is bounded by its store's own timeout
	// (RedisConfig.Timeout, the Banner's): a bound of the stage's own,
	// shorter than those, would cut a call off as the caller's, which
	// the stores do not judge Redis by.
	ctx := context.Background()
	var over []string // the scopes whose key this CONNECT took over the limit
	if s.RemoteIP.IsValid() {
		key := st.addrKey(s.RemoteIP)
		if st.over(ctx, ScopeAddress, key, now) {
			st.ban(ctx, ScopeAddress, key, key)
			over = append(over, "address")
		}
	}
	if p := s.Principal; p != nil && !p.Anonymous && p.Name != "" {
		if st.over(ctx, ScopePrincipal, p.Name, now) {
			st.ban(ctx, ScopePrincipal, p.Name, interceptor.PrincipalBanKey(p.Name))
			over = append(over, "principal")
		}
	}
	if len(over) == 0 {
		return interceptor.Continue()
	}
	what := "this " + over[0] + " is"
	if len(over) == 2 {
		what = "this address and this principal are"
	}
	secs := int64((st.banFor + time.Second - 1) / time.Second)
	return interceptor.RejectFrame(outcome.RejectBanned, "banned",
		fmt.Sprintf("more than %d connects within %v: %s banned for another %d s",
			st.counter.Limit(), st.counter.Window(), what, secs))
}

// over counts one CONNECT of key and reports whether it took the key
// over the limit. A count that fails (the context ended) is not over.
func (st *Stage) over(ctx context.Context, scope, key string, now time.Time) bool {
	c, err := st.counter.Count(ctx, scope, key, now)
	return err == nil && c.Over
}

// ban records the ban of banKey, the key of scope that looped. A ban
// whose Redis part failed holds on this instance (the Banner records it
// in memory first), and the next CONNECT of the key, still over the
// limit, bans it again.
func (st *Stage) ban(ctx context.Context, scope, key, banKey string) {
	st.counter.observer.Banned(scope)
	if err := st.banner.Ban(ctx, banKey, st.banFor); err != nil {
		st.counter.logger.Error("reconnect: recording ban failed", "scope", scope, "key", key, "err", err)
		return
	}
	st.counter.logger.Warn("reconnect loop banned", "scope", scope, "key", key,
		"limit", st.counter.Limit(), "window", st.counter.Window(), "ban", st.banFor)
}
