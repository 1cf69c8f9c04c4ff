package interceptor

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// PrincipalConfig configures the PrincipalStage. The zero value accepts
// every CONNECT as an anonymous principal.
type PrincipalConfig struct {
	// Verifier checks the token of a CONNECT and of a token header (see
	// PrincipalStage); jwtauth.Verifier checks JWTs. Nil: no token is
	// checked, every session is anonymous and token headers are ignored.
	Verifier TokenVerifier
	// Required refuses sessions without a valid token. It needs a
	// Verifier. False: a CONNECT without any token is anonymous, but a
	// token that is present must still be valid.
	Required bool
	// Now is the clock given to Verifier.Verify; nil means time.Now.
	Now func() time.Time
	// Bans, when set, is asked at CONNECT whether an authenticated,
	// non-anonymous principal is banned (key "principal:<name>", the key
	// the LimitStage bans at escalation); a banned principal is rejected
	// with outcome.RejectBanned. The check is bounded by BanCheckTimeout; a check
	// that fails or times out lets the session in. Nil: no check.
	Bans BanChecker

	// RememberedTokens is how many tokens each session remembers once
	// verified (by a keyed hash), so that a token header repeating one,
	// or switching back to one, costs no signature check. Default
	// DefaultRememberedTokens; negative is an error.
	RememberedTokens int
	// TokenChecks new tokens (not remembered) may be verified per
	// session per TokenCheckWindow (a fixed window) after CONNECT; one
	// more ends the session with outcome.RejectTokenFlood. Defaults
	// DefaultTokenChecks and DefaultTokenCheckWindow; negative is an
	// error.
	TokenChecks      int
	TokenCheckWindow time.Duration
}

// TokenVerifier turns a client's token into the principal it names. It is
// how the PrincipalStage authenticates without depending on any token
// format; jwtauth.Verifier implements it for JWTs.
//
// Verify checks token as of now and returns a new Principal, which the
// stage keeps: its Name (not empty), its destination patterns and its
// Expires, the instant the token stops being accepted (zero: never). An
// invalid token is an error whose text the client reads as the body of
// the ERROR frame, so it says what is wrong and never repeats the token.
// Verify is called on sessions' reader goroutines, from many sessions at
// once.
type TokenVerifier interface {
	Verify(token string, now time.Time) (*Principal, error)
}

// BanChecker reports whether key is banned and for how much longer. The
// handshake package's Limiter implements it. An error means no answer.
type BanChecker interface {
	Banned(ctx context.Context, key string) (retryAfter time.Duration, banned bool, err error)
}

// BanCheckTimeout bounds the ban check of one CONNECT. It is spent on the
// session's reader goroutine before CONNECTED is sent, so it is short; the
// Limiter's own Redis timeout (50ms by default) is below it, so a slow
// Redis is answered from memory rather than cut off here.
const BanCheckTimeout = 100 * time.Millisecond

// PrincipalStage identifies the session at CONNECT and enforces the
// principal's destination patterns on SUBSCRIBE and SEND.
//
// A token is looked for, in order, in the CONNECT passcode header, the
// CONNECT Authorization header ("Bearer <token>"), and the handshake URL's
// access_token query parameter, and handed to PrincipalConfig.Verifier,
// which returns the principal with its destination patterns
// (jwtauth.Verifier reads them from a JWT's claims). A nil pattern list
// means any destination; an empty one means none. Patterns are matched by
// MatchDestination. A token the Verifier refuses, a missing one when
// Required, or a frame outside the patterns is rejected (ERROR and
// close). With PrincipalConfig.Bans set, so is the CONNECT of a
// principal that is banned: the ban follows the principal across client
// IPs, which the handshake's IP ban cannot do.
//
// # Token lifetime and refresh
//
// A session authenticated by a token lives as long as the token says: the
// stage sets Principal.Expires to the token's end (a JWT's exp plus the
// verifier's leeway), and the server ends the session then with ERROR
// "token expired" and a close. To keep it open, the client sends a newer
// token before then in a "token" header on any frame after CONNECT. The
// stage checks it like a CONNECT token (for a JWT: signature, exp in the
// future, nbf) and that it names the session's principal; it then moves
// Expires to the new end and replaces the destination patterns with the
// new token's. An invalid token, or one for another principal, ends the
// session with ERROR "invalid credentials" (reason outcome.RejectAuth), as does a
// token sent by an anonymous session. Without a Verifier, the header is
// ignored. The token header is never passed on to subscribers of a SEND
// that carries it.
//
// Checking a signature costs tens of microseconds, and this stage runs
// before any rate limit, so a session's checks are bounded: the tokens it
// was verified from are remembered (PrincipalConfig.RememberedTokens, by
// a keyed hash), and a header repeating one, or switching back to one
// that has not expired, is applied without a check; new tokens are
// checked at most PrincipalConfig.TokenChecks times per TokenCheckWindow,
// and one more ends the session with ERROR "too many token checks"
// (outcome.RejectTokenFlood).
//
// A frame that carries only the token and does nothing else is an
// UNSUBSCRIBE of an id that is not subscribed, with a receipt (STOMP 1.2
// allows it; the server answers with the RECEIPT once the new expiry is in
// place):
//
//	UNSUBSCRIBE
//	id:token-refresh
//	receipt:refresh-1
//	token:<jwt>
//
// The new patterns apply to later SUBSCRIBE and SEND frames; a
// subscription made under the old ones stays. Use a frame the session
// limiter does not count (UNSUBSCRIBE is not counted by default): a
// refresh on a frame the limiter drops is lost with it.
//
// A PrincipalStage is safe for concurrent use.
type PrincipalStage struct {
	cfg PrincipalConfig
}

var _ Stage = (*PrincipalStage)(nil)

// NewPrincipalStage validates cfg and returns the stage.
func NewPrincipalStage(cfg PrincipalConfig) (*PrincipalStage, error) {
	if cfg.Required && cfg.Verifier == nil {
		return nil, configErrorf("Required authentication needs a Verifier")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.withTokenDefaults(); err != nil {
		return nil, err
	}
	return &PrincipalStage{cfg: cfg}, nil
}

// verify asks the Verifier about token and returns the principal, or the
// rejection.
func (p *PrincipalStage) verify(token string) (*Principal, Result) {
	pr, err := p.cfg.Verifier.Verify(token, p.cfg.Now())
	if err != nil {
		return nil, RejectFrame(outcome.RejectAuth, "invalid credentials", err.Error())
	}
	if pr == nil || pr.Name == "" {
		return nil, RejectFrame(outcome.RejectAuth, "invalid credentials", "the token names no principal")
	}
	pr.token = tokenSum(token)
	return pr, Continue()
}

// tokenSeed keys tokenSum for this process: a client cannot make another
// token hash to the one its session was verified from.
var tokenSeed = maphash.MakeSeed()

// tokenSum is the keyed hash a Principal keeps of its token; never zero.
func tokenSum(token string) uint64 {
	return maphash.String(tokenSeed, token) | 1
}

// TokenHeader is the header that carries a newer token on any frame after
// CONNECT (see PrincipalStage).
const TokenHeader = "token"

// Handle authenticates CONNECT and STOMP frames, applies a newer token
// carried by any later frame, and checks destinations of SUBSCRIBE and
// SEND frames.
func (p *PrincipalStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	switch f.Command {
	case "CONNECT", "STOMP":
		return p.connect(s, f)
	}
	if s.Principal == nil {
		return RejectFrame(outcome.RejectAuth, "not authenticated", "CONNECT first")
	}
	if token, ok := f.Lookup(TokenHeader); ok && p.cfg.Verifier != nil {
		if r := p.refresh(s, token); r.Outcome != Pass {
			return r
		}
	}
	switch f.Command {
	case "SEND":
		return p.check(s, s.Principal.Send, f)
	case "SUBSCRIBE":
		return p.check(s, s.Principal.Subscribe, f)
	}
	return Continue()
}

// refresh applies a newer token for the session's principal: a new expiry
// and new destination patterns. The Principal is replaced, not changed in
// place, so one read elsewhere sees either the old or the new one whole.
func (p *PrincipalStage) refresh(s *Session, token string) Result {
	sum := tokenSum(token)
	if s.Principal.token != 0 && s.Principal.token == sum {
		// The token the session holds already: checking its signature
		// again on every frame that repeats it would let a client spend
		// the server's CPU outside any rate limit, as this stage runs
		// before the send limiter. Its expiry is in force already.
		return Continue()
	}
	now := p.cfg.Now()
	if pr := s.remembered(sum, now); pr != nil {
		// A token verified before for this session, for its principal
		// (only those are remembered): a client alternating two tokens
		// costs two checks, not one per frame.
		s.Principal = pr
		return Continue()
	}
	if !p.allowTokenCheck(s, now) {
		return p.tokenFlood()
	}
	pr, r := p.verify(token)
	if r.Outcome != Pass {
		return r
	}
	if s.Principal.Anonymous {
		return RejectFrame(outcome.RejectAuth, "invalid credentials",
			"a token header needs a session that was authenticated with a token; reconnect with it instead")
	}
	if pr.Name != s.Principal.Name {
		return RejectFrame(outcome.RejectAuth, "invalid credentials",
			fmt.Sprintf("the token is for %q, not for the session's principal %q", pr.Name, s.Principal.Name))
	}
	s.remember(s.Principal, p.cfg.RememberedTokens)
	s.remember(pr, p.cfg.RememberedTokens)
	s.Principal = pr
	return Continue()
}

func (p *PrincipalStage) check(s *Session, patterns []string, f *stompframe.Frame) Result {
	if patterns == nil {
		return Continue()
	}
	dest := f.Get("destination")
	for _, pat := range patterns {
		if MatchDestination(pat, dest) {
			return Continue()
		}
	}
	return RejectFrame(outcome.RejectPermission, "permission denied",
		fmt.Sprintf("%s to %q is not allowed for %q", f.Command, dest, s.Principal.Name))
}

func (p *PrincipalStage) connect(s *Session, f *stompframe.Frame) Result {
	token := tokenFrom(s, f)
	if p.cfg.Verifier == nil || token == "" {
		if p.cfg.Required {
			return RejectFrame(outcome.RejectAuth, "authentication required", "a valid token is required in the passcode header, an Authorization: Bearer header or the access_token query parameter")
		}
		s.Principal = &Principal{Name: "anonymous-" + s.ID, Anonymous: true}
		return Continue()
	}
	pr, r := p.verify(token)
	if r.Outcome != Pass {
		return r
	}
	if r, banned := p.banned(pr.Name); banned {
		return r
	}
	s.Principal = pr
	return Continue()
}

// banned asks cfg.Bans whether the principal name is banned and, if so,
// returns the rejection. A check that cannot be made is no ban: a Redis
// outage must not lock every principal out (the Limiter reports its store
// errors to its own Observer).
func (p *PrincipalStage) banned(name string) (Result, bool) {
	if p.cfg.Bans == nil {
		return Result{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), BanCheckTimeout)
	defer cancel()
	d, banned, err := p.cfg.Bans.Banned(ctx, PrincipalBanKey(name))
	if err != nil || !banned {
		return Result{}, false
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return RejectRetry(outcome.RejectBanned, "banned",
		fmt.Sprintf("this principal is banned for another %d s", secs), d), true
}

// PrincipalBanKey is the ban key of the principal name: the key the
// PrincipalStage checks at CONNECT (PrincipalConfig.Bans) and the key
// under which a stage that bans a principal (the LimitStage at
// escalation, or one of a program's own) records the ban with its Banner.
func PrincipalBanKey(name string) string {
	return "principal:" + name
}

func tokenFrom(s *Session, f *stompframe.Frame) string {
	if v := f.Get("passcode"); v != "" {
		return v
	}
	if v := f.Get("Authorization"); v != "" {
		// The auth scheme name is case-insensitive (RFC 9110 11.1).
		if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
			return strings.TrimSpace(v[7:])
		}
	}
	if s.Query != nil {
		return s.Query.Get("access_token")
	}
	return ""
}

// MatchDestination reports whether dest matches pattern. In a pattern, "*"
// matches any run of characters other than '/' and '.', the separators
// STOMP destinations use ("/topic/room.42"); "**" matches any run of
// characters, separators included. Everything else matches itself.
//
// The cost is at most proportional to len(pattern)×len(dest), whatever
// the wildcards: dest comes from the client, so matching must not
// backtrack exponentially.
func MatchDestination(pattern, dest string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == dest
	}
	// The literal prefix and suffix around the wildcards match only
	// themselves, at the ends of dest.
	if !strings.HasPrefix(dest, pattern[:star]) {
		return false
	}
	pattern, dest = pattern[star:], dest[star:]
	suffix := pattern[strings.LastIndexByte(pattern, '*')+1:]
	if !strings.HasSuffix(dest, suffix) {
		return false
	}
	pattern, dest = pattern[:len(pattern)-len(suffix)], dest[:len(dest)-len(suffix)]

	// cur[j] reports whether the pattern read so far can match dest[:j].
	n := len(dest)
	var stack [2][128]bool
	cur, next := stack[0][:], stack[1][:]
	if n+1 > len(cur) {
		cur, next = make([]bool, n+1), make([]bool, n+1)
	}
	cur, next = cur[:n+1], next[:n+1]
	cur[0] = true
	for k := 0; k < len(pattern); {
		clear(next)
		found := false
		switch {
		case strings.HasPrefix(pattern[k:], "**"):
			k += 2
			for j := range next {
				found = found || cur[j]
				next[j] = found
			}
		case pattern[k] == '*':
			k++
			on := false // a match of "*" may end at j
			for j := range next {
				on = on || cur[j]
				next[j] = on
				found = found || on
				if j < n && (dest[j] == '/' || dest[j] == '.') {
					on = false
				}
			}
		default:
			c := pattern[k]
			k++
			for j := range n {
				if cur[j] && dest[j] == c {
					next[j+1] = true
					found = true
				}
			}
		}
		if !found {
			return false
		}
		cur, next = next, cur
	}
	return cur[n]
}
