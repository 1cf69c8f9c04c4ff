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
	// shared secret. With neither JWTSecret nor Keys there is no JWT
	// checking: every session is anonymous.
	JWTSecret []byte
	// Keys, when set, enables RS256 and ES256 JWT authentication with
	// the public keys it holds (ParsePEMKeys for a PEM file, NewJWKS for
	// a provider's key set). Each key verifies only the algorithm of its
	// type (KeyAlg). Both may be set: HS256 tokens are then checked
	// against JWTSecret, RS256 and ES256 ones against Keys.
	Keys KeySource
	// Required refuses sessions without a valid token. It needs JWTSecret
	// or Keys. False: a CONNECT without any token is anonymous, but a
	// token that is present must still be valid.
	Required bool
	// Leeway is the clock skew allowed on exp and nbf. Default 0. A
	// session ends at its token's exp plus Leeway.
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
// access_token query parameter. The token is a JWT signed with HS256
// (PrincipalConfig.JWTSecret), RS256 or ES256 (PrincipalConfig.Keys), with
// these claims:
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
// # Token lifetime and refresh
//
// A session authenticated by a token lives as long as the token says: the
// stage sets Principal.Expires to exp (plus Leeway), and the server ends
// the session then with ERROR "token expired" and a close. To keep it
// open, the client sends a newer token before exp in a "token" header on
// any frame after CONNECT. The stage checks it like a CONNECT token
// (signature, exp in the future, nbf) and that its sub is the session's
// principal; it then moves Expires to the new exp and replaces the
// destination patterns with the new token's. An invalid token, or one for
// another principal, ends the session with ERROR "invalid credentials"
// (reason RejectAuth), as does a token sent by an anonymous session. With
// neither JWTSecret nor Keys, the header is ignored. The token header is
// never passed on to subscribers of a SEND that carries it.
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
	cfg    PrincipalConfig
	parser *jwt.Parser
}

var _ Stage = (*PrincipalStage)(nil)

// NewPrincipalStage validates cfg and returns the stage.
func NewPrincipalStage(cfg PrincipalConfig) (*PrincipalStage, error) {
	if cfg.Required && len(cfg.JWTSecret) == 0 && cfg.Keys == nil {
		return nil, errors.New("interceptor: Required authentication needs a JWTSecret or Keys")
	}
	if cfg.Leeway < 0 {
		return nil, fmt.Errorf("interceptor: Leeway %v is negative", cfg.Leeway)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &PrincipalStage{cfg: cfg}
	var algs []string
	if len(cfg.JWTSecret) > 0 {
		algs = append(algs, AlgHS256)
	}
	if cfg.Keys != nil {
		algs = append(algs, AlgRS256, AlgES256)
	}
	if len(algs) > 0 {
		p.parser = jwt.NewParser(
			jwt.WithValidMethods(algs),
			jwt.WithExpirationRequired(),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithTimeFunc(cfg.Now),
		)
	}
	return p, nil
}

// key is the parser's Keyfunc. The algorithm the token names picks the
// key kind, and each algorithm has exactly one: the secret for HS256, the
// source's keys of that algorithm for RS256 and ES256. A public key is
// never offered to HMAC, whatever the token says.
func (p *PrincipalStage) key(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	switch alg {
	case AlgHS256:
		if len(p.cfg.JWTSecret) == 0 {
			break
		}
		return p.cfg.JWTSecret, nil
	case AlgRS256, AlgES256:
		if p.cfg.Keys == nil {
			break
		}
		kid, _ := t.Header["kid"].(string)
		keys, err := p.cfg.Keys.PublicKeys(alg, kid)
		if err != nil {
			return nil, err
		}
		set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, 0, len(keys))}
		for _, k := range keys {
			if a, err := keyAlg(k); err == nil && a == alg {
				set.Keys = append(set.Keys, k)
			}
		}
		if len(set.Keys) == 0 {
			return nil, ErrUnknownKey
		}
		return set, nil
	}
	return nil, fmt.Errorf("interceptor: algorithm %q is not accepted", alg)
}

// verify checks token and returns its claims, or the rejection.
func (p *PrincipalStage) verify(token string) (*Claims, Result) {
	var c Claims
	if _, err := p.parser.ParseWithClaims(token, &c, p.key); err != nil {
		return nil, RejectFrame(RejectAuth, "invalid credentials", err.Error())
	}
	if c.Subject == "" {
		return nil, RejectFrame(RejectAuth, "invalid credentials", `token has no "sub" claim`)
	}
	return &c, Continue()
}

// principal builds the principal c describes.
func (p *PrincipalStage) principal(c *Claims) *Principal {
	pr := &Principal{Name: c.Subject, Expires: c.ExpiresAt.Add(p.cfg.Leeway)}
	if c.STOMP != nil {
		pr.Subscribe = nonNil(c.STOMP.Subscribe)
		pr.Send = nonNil(c.STOMP.Send)
	}
	return pr
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
		return RejectFrame(RejectAuth, "not authenticated", "CONNECT first")
	}
	if token, ok := f.Lookup(TokenHeader); ok && p.parser != nil {
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
	c, r := p.verify(token)
	if r.Outcome != Pass {
		return r
	}
	if s.Principal.Anonymous {
		return RejectFrame(RejectAuth, "invalid credentials",
			"a token header needs a session that was authenticated with a token; reconnect with it instead")
	}
	if c.Subject != s.Principal.Name {
		return RejectFrame(RejectAuth, "invalid credentials",
			fmt.Sprintf("the token is for %q, not for the session's principal %q", c.Subject, s.Principal.Name))
	}
	s.Principal = p.principal(c)
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
	c, r := p.verify(token)
	if r.Outcome != Pass {
		return r
	}
	if r, banned := p.banned(c.Subject); banned {
		return r
	}
	s.Principal = p.principal(c)
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
