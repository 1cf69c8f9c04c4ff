package interceptor

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// Defaults of the PrincipalStage's token checks after CONNECT, each with
// its reason.
const (
	// DefaultRememberedTokens is how many verified tokens a session
	// remembers: the one it holds, the one before, and a couple more for
	// a client that switches between tabs' tokens. A token remembered is
	// not verified again (an RS256 check costs 34 µs, an ES256 one 50 µs).
	DefaultRememberedTokens = 4
	// DefaultTokenChecks and DefaultTokenCheckWindow bound the signature
	// checks of new tokens per session: a client refreshes its token
	// every few minutes, so 10 per minute is a token every 6 s, while a
	// client that sends a fresh token on every frame is held to 10
	// checks a minute instead of one per frame.
	DefaultTokenChecks      = 10
	DefaultTokenCheckWindow = time.Minute
)

// rememberedToken is a token a session was verified from: its keyed hash
// and the principal it gave.
type rememberedToken struct {
	sum uint64
	p   *Principal
}

// remembered returns the principal of the token hashed to sum if the
// session verified it before and it has not expired at now, or nil.
func (s *Session) remembered(sum uint64, now time.Time) *Principal {
	for _, t := range s.tokens {
		if t.sum == sum && (t.p.Expires.IsZero() || now.Before(t.p.Expires)) {
			return t.p
		}
	}
	return nil
}

// remember records pr, verified from a token, among the session's n most
// recent ones, replacing the oldest.
func (s *Session) remember(pr *Principal, n int) {
	if pr.token == 0 || n <= 0 {
		return
	}
	for _, t := range s.tokens {
		if t.sum == pr.token {
			return
		}
	}
	if len(s.tokens) < n {
		s.tokens = append(s.tokens, rememberedToken{sum: pr.token, p: pr})
		return
	}
	s.tokens[s.tokenNext] = rememberedToken{sum: pr.token, p: pr}
	s.tokenNext = (s.tokenNext + 1) % n
}

// allowTokenCheck charges one signature check at now to the session's
// fixed window of cfg.TokenChecks per cfg.TokenCheckWindow.
func (p *PrincipalStage) allowTokenCheck(s *Session, now time.Time) bool {
	t := now.UnixNano()
	if t-s.checkStart >= int64(p.cfg.TokenCheckWindow) {
		s.checkStart, s.checks = t, 0
	}
	if s.checks >= p.cfg.TokenChecks {
		return false
	}
	s.checks++
	return true
}

// tokenFlood is the rejection of a check over the budget.
func (p *PrincipalStage) tokenFlood() Result {
	return RejectFrame(outcome.RejectTokenFlood, "too many token checks",
		fmt.Sprintf("at most %d new tokens per %v per session; send a token once, when it is new", p.cfg.TokenChecks, p.cfg.TokenCheckWindow))
}

// withTokenDefaults fills and checks the token-check settings of cfg.
func (cfg *PrincipalConfig) withTokenDefaults() error {
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{
		{"RememberedTokens", &cfg.RememberedTokens, DefaultRememberedTokens},
		{"TokenChecks", &cfg.TokenChecks, DefaultTokenChecks},
	} {
		if *n.v < 0 {
			return configErrorf("PrincipalConfig.%s %d is negative", n.name, *n.v)
		}
		if *n.v == 0 {
			*n.v = n.def
		}
	}
	if cfg.TokenCheckWindow < 0 {
		return configErrorf("PrincipalConfig.TokenCheckWindow %v is negative", cfg.TokenCheckWindow)
	}
	if cfg.TokenCheckWindow == 0 {
		cfg.TokenCheckWindow = DefaultTokenCheckWindow
	}
	return nil
}
