package jwtauth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
)

// Config configures a Verifier. At least one of Secret and Keys must be
// set.
type Config struct {
	// Secret, when set, enables HS256 tokens signed with this shared
	// secret.
	Secret []byte
	// Keys, when set, enables RS256 and ES256 tokens checked against the
	// public keys it holds (ParsePEMKeys for a PEM file, NewJWKS for a
	// provider's key set). Each key verifies only the algorithm of its
	// type (KeyAlg), and a token is checked against one key: the one its
	// kid names, or the only one of its alg; a token that several keys
	// could verify is refused (ErrAmbiguousKey). Both may be set: HS256 tokens are then checked
	// against Secret, RS256 and ES256 ones against Keys.
	Keys KeySource
	// Leeway is the clock skew allowed on exp and nbf. Default 0;
	// negative is an error. A principal's credentials end at its token's
	// exp plus Leeway.
	Leeway time.Duration
}

// Verifier checks JSON Web Tokens (RFC 7519) and turns them into the
// principal they describe: it is the interceptor.TokenVerifier of a
// PrincipalStage that authenticates with JWTs. A token carries these
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
// An absent list means any destination; an empty list means none (see
// interceptor.MatchDestination). User destinations ("/user/...") are the
// exception: the server refuses a client SEND there unless a send pattern
// starts with "/user/" itself (see server.UserPrefix). Only the algorithms enabled by Config
// are accepted, each against its own kind of key (see AlgHS256); "none"
// never is.
//
// A Verifier is safe for concurrent use.
type Verifier struct {
	cfg    Config
	parser *jwt.Parser
}

var _ interceptor.TokenVerifier = (*Verifier)(nil)

// MinSecretLen is the shortest HS256 secret New accepts: 32 bytes, the
// hash's size (RFC 7518 section 3.2).
const MinSecretLen = 32

// New validates cfg and returns the verifier.
func New(cfg Config) (*Verifier, error) {
	if len(cfg.Secret) == 0 && cfg.Keys == nil {
		return nil, configErrorf("Config needs a Secret or Keys")
	}
	if n := len(cfg.Secret); n > 0 && n < MinSecretLen {
		return nil, configErrorf("Secret is %d bytes; HS256 needs at least %d (RFC 7518 section 3.2), or a guessed secret signs tokens for anyone", n, MinSecretLen)
	}
	if cfg.Leeway < 0 {
		return nil, configErrorf("Leeway %v is negative", cfg.Leeway)
	}
	var algs []string
	if len(cfg.Secret) > 0 {
		algs = append(algs, AlgHS256)
	}
	if cfg.Keys != nil {
		algs = append(algs, AlgRS256, AlgES256)
	}
	// The claims are validated by Verify at the instant it is given, so
	// the parser checks the algorithm and the signature only.
	return &Verifier{cfg: cfg, parser: jwt.NewParser(
		jwt.WithValidMethods(algs),
		jwt.WithoutClaimsValidation(),
	)}, nil
}

// Verify checks token's signature and its exp (required) and nbf claims at
// now, allowing Config.Leeway, and returns the principal named by its sub
// claim, with Expires set to exp plus Leeway and the destination patterns
// of its stomp claim.
//
// The error says what is wrong with the token ("token has invalid claims:
// token is expired", "token signature is invalid: ..."). Its text is
// what the client reads in the ERROR frame's body, so it carries no
// package prefix: the client has no use for one.
func (v *Verifier) Verify(token string, now time.Time) (*interceptor.Principal, error) {
	var c Claims
	if _, err := v.parser.ParseWithClaims(token, &c, v.key); err != nil {
		return nil, err
	}
	val := jwt.NewValidator(
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(v.cfg.Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err := val.Validate(&c); err != nil {
		// The same text the parser gives when it validates the claims
		// itself.
		return nil, fmt.Errorf("%w: %w", jwt.ErrTokenInvalidClaims, err)
	}
	if c.Subject == "" {
		return nil, errors.New(`token has no "sub" claim`)
	}
	p := &interceptor.Principal{Name: c.Subject, Expires: c.ExpiresAt.Add(v.cfg.Leeway)}
	if c.STOMP != nil {
		// c is this call's own, so its lists are taken, not copied; an
		// absent list stays nil (any destination), a present one, even
		// empty, restricts.
		p.Subscribe, p.Send = c.STOMP.Subscribe, c.STOMP.Send
	}
	return p, nil
}

// key is the parser's Keyfunc. The algorithm the token names picks the
// key kind, and each algorithm has exactly one: the secret for HS256, the
// source's key of that algorithm for RS256 and ES256. A public key is
// never offered to HMAC, whatever the token says. At most one key is
// ever tried: when the source offers several for the token's alg and
// kid, the token is refused with ErrAmbiguousKey instead of costing a
// signature check per key.
func (v *Verifier) key(t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	switch alg {
	case AlgHS256:
		if len(v.cfg.Secret) == 0 {
			break
		}
		return v.cfg.Secret, nil
	case AlgRS256, AlgES256:
		if v.cfg.Keys == nil {
			break
		}
		kid, _ := t.Header["kid"].(string)
		keys, err := v.cfg.Keys.PublicKeys(alg, kid)
		if err != nil {
			return nil, err
		}
		set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, 0, len(keys))}
		for _, k := range keys {
			if a, err := keyAlg(k); err == nil && a == alg {
				set.Keys = append(set.Keys, k)
			}
		}
		switch len(set.Keys) {
		case 0:
			return nil, ErrUnknownKey
		case 1:
			return set.Keys[0], nil
		}
		if kid == "" {
			return nil, fmt.Errorf("%w: the token has no kid and %d %s keys are configured", ErrAmbiguousKey, len(set.Keys), alg)
		}
		return nil, fmt.Errorf("%w: kid %q matches %d %s keys", ErrAmbiguousKey, kid, len(set.Keys), alg)
	}
	return nil, fmt.Errorf("jwtauth: algorithm %q is not accepted", alg)
}

// Claims is the JWT claim set a Verifier reads.
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
