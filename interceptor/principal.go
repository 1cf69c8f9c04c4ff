package interceptor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/stompframe"
)

// PrincipalConfig configures the PrincipalStage. The zero value accepts
// every CONNECT as an anonymous principal.
type PrincipalConfig struct {
	// JWTSecret, when set, enables HS256 JWT authentication with this
	// shared secret. Empty: no JWT checking, every session is anonymous.
	JWTSecret []byte
	// Required refuses sessions without a valid token. It needs JWTSecret.
	// False: a CONNECT without any token is anonymous, but a token that is
	// present must still be valid.
	Required bool
	// Leeway is the clock skew allowed on exp and nbf. Default 0.
	Leeway time.Duration
	// Now is the clock used to check exp and nbf; nil means time.Now.
	Now func() time.Time
	// Bans, when set, is asked at CONNECT whether an authenticated,
	// non-anonymous principal is banned (key "principal:<name>", the key
	// the LimitStage bans at escalation); a banned principal is rejected
	// with RejectBanned. The check is bounded by BanCheckTimeout; a check
	// that fails or times out lets the session in. Nil: no check.
	Bans BanChecker
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
// access_token query parameter. The token is an HS256 JWT with these
// claims:
//
//	{
//	  "sub": "alice",                       // principal name (user-name)
//	  "exp": 1767225600,                    // required: expiry, Unix seconds
//	  "nbf": 1767222000,                    // optional
//	  "stomp": {
//	    "subscribe": ["/topic/room.*"],     // optional: may SUBSCRIBE to
//	    "send":      ["/topic/room.42"]     // optional: may SEND to
//	  }
//	}
//
// An absent list means any destination; an empty list means none. Patterns
// are matched by MatchDestination. An invalid or expired token, a missing
// one when Required, or a frame outside the patterns is rejected (ERROR
// and close). With PrincipalConfig.Bans set, so is the CONNECT of a
// principal that is banned: the ban follows the principal across client
// IPs, which the handshake's IP ban cannot do.
//
// A PrincipalStage is safe for concurrent use.
type PrincipalStage struct {
	cfg    PrincipalConfig
	parser *jwt.Parser
}

var _ Stage = (*PrincipalStage)(nil)

// NewPrincipalStage validates cfg and returns the stage.
func NewPrincipalStage(cfg PrincipalConfig) (*PrincipalStage, error) {
	if cfg.Required && len(cfg.JWTSecret) == 0 {
		return nil, errors.New("interceptor: Required authentication needs a JWTSecret")
	}
	if cfg.Leeway < 0 {
		return nil, fmt.Errorf("interceptor: Leeway %v is negative", cfg.Leeway)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &PrincipalStage{cfg: cfg}
	if len(cfg.JWTSecret) > 0 {
		p.parser = jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithTimeFunc(cfg.Now),
		)
	}
	return p, nil
}

// Reject reasons of the PrincipalStage.
const (
	// RejectAuth: missing, invalid or expired credentials.
	RejectAuth = "auth"
	// RejectPermission: a destination outside the principal's patterns.
	RejectPermission = "permission"
	// RejectBanned: CONNECT by a principal that is banned (see
	// PrincipalConfig.Bans), usually for an earlier session's rate limit
	// abuse. The ERROR says how long the ban still holds.
	RejectBanned = "banned"
)

// Claims is the JWT claim set the PrincipalStage reads.
type Claims struct {
	jwt.RegisteredClaims
	STOMP *DestinationClaims `json:"stomp,omitempty"`
}

// DestinationClaims lists the destination patterns a principal may use.
// A nil slice means any destination.
type DestinationClaims struct {
	Subscribe []string `json:"subscribe"`
	Send      []string `json:"send"`
}

// Handle authenticates CONNECT and STOMP frames and checks destinations
// of SUBSCRIBE and SEND frames.
func (p *PrincipalStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	switch f.Command {
	case "CONNECT", "STOMP":
		return p.connect(s, f)
	case "SEND":
		return p.check(s, s.principalSend(), f)
	case "SUBSCRIBE":
		return p.check(s, s.principalSubscribe(), f)
	}
	if s.Principal == nil {
		return RejectFrame(RejectAuth, "not authenticated", "CONNECT first")
	}
	return Continue()
}

func (s *Session) principalSend() []string {
	if s.Principal == nil {
		return nil
	}
	return s.Principal.Send
}

func (s *Session) principalSubscribe() []string {
	if s.Principal == nil {
		return nil
	}
	return s.Principal.Subscribe
}

func (p *PrincipalStage) check(s *Session, patterns []string, f *stompframe.Frame) Result {
	if s.Principal == nil {
		return RejectFrame(RejectAuth, "not authenticated", "CONNECT first")
	}
	if patterns == nil {
		return Continue()
	}
	dest := f.Get("destination")
	for _, pat := range patterns {
		if MatchDestination(pat, dest) {
			return Continue()
		}
	}
	return RejectFrame(RejectPermission, "permission denied",
		fmt.Sprintf("%s to %q is not allowed for %q", f.Command, dest, s.Principal.Name))
}

func (p *PrincipalStage) connect(s *Session, f *stompframe.Frame) Result {
	token := tokenFrom(s, f)
	if p.parser == nil || token == "" {
		if p.cfg.Required {
			return RejectFrame(RejectAuth, "authentication required", "a valid token is required in the passcode header, an Authorization: Bearer header or the access_token query parameter")
		}
		s.Principal = &Principal{Name: "anonymous-" + s.ID, Anonymous: true}
		return Continue()
	}
	var c Claims
	_, err := p.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return p.cfg.JWTSecret, nil })
	if err != nil {
		return RejectFrame(RejectAuth, "invalid credentials", err.Error())
	}
	if c.Subject == "" {
		return RejectFrame(RejectAuth, "invalid credentials", `token has no "sub" claim`)
	}
	if r, banned := p.banned(c.Subject); banned {
		return r
	}
	pr := &Principal{Name: c.Subject}
	if c.STOMP != nil {
		pr.Subscribe = nonNil(c.STOMP.Subscribe)
		pr.Send = nonNil(c.STOMP.Send)
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
	d, banned, err := p.cfg.Bans.Banned(ctx, principalBanKey(name))
	if err != nil || !banned {
		return Result{}, false
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return RejectFrame(RejectBanned, "banned",
		fmt.Sprintf("this principal is banned for another %d s", secs)), true
}

// principalBanKey is the ban key of the principal name, shared by the
// LimitStage (which bans) and the PrincipalStage (which checks).
func principalBanKey(name string) string {
	return "principal:" + name
}

// nonNil keeps the distinction the claim format makes: an absent list
// (nil) allows any destination; a present one, even empty, restricts.
func nonNil(v []string) []string {
	if v == nil {
		return nil
	}
	return append(make([]string, 0, len(v)), v...)
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
