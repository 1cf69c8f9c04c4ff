package jwtauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// The token algorithms a Verifier accepts. Each is pinned to one kind of
// key, so a token cannot choose how it is checked: an HS256 token is only
// ever checked against Config.Secret, never against a public key used as
// an HMAC secret, and "none" is never accepted.
const (
	// AlgHS256 is HMAC with SHA-256 over Config.Secret.
	AlgHS256 = "HS256"
	// AlgRS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 3.3), for RSA
	// public keys of MinRSABits to MaxRSABits.
	AlgRS256 = "RS256"
	// AlgES256 is ECDSA on P-256 with SHA-256 (RFC 7518 3.4), for P-256
	// public keys only.
	AlgES256 = "ES256"
)

// MinRSABits is the shortest RSA modulus accepted. RFC 7518 3.3 requires
// 2048 bits for RS256; a shorter key is refused where it is loaded, not
// when a token arrives.
const MinRSABits = 2048

// MaxRSABits is the longest RSA modulus accepted, four times the usual
// 2048: the cost of a verification grows with the square of the modulus
// or worse, and without a bound one key in a JWKS document of
// DefaultJWKSMaxBytes could be two million bits long and make every
// CONNECT whose token names it expensive to refuse.
const MaxRSABits = 8192

// KeySource finds the public keys that may verify a token. The Verifier
// asks it with the token's alg (AlgRS256 or AlgES256) and the kid of the
// token's header ("" when there is none), and checks the token against
// the key returned; several keys refuse the token (ErrAmbiguousKey), so
// a source narrows by kid as far as it can. A source returns
// only keys of alg's type (KeyAlg(key) == alg); the Verifier drops any
// other. With no key to offer it returns an error, usually ErrUnknownKey.
//
// PublicKeys is called on the session's reader goroutine at CONNECT and at
// each token refresh, from many sessions at once, so it must be safe for
// concurrent use and quick; a source that must fetch bounds the wait.
type KeySource interface {
	PublicKeys(alg, kid string) ([]crypto.PublicKey, error)
}

// KeyAlg returns the one algorithm key may verify: AlgRS256 for an RSA
// public key of at least MinRSABits, AlgES256 for a P-256 public key. Any
// other key is an error naming what is wrong with it.
func KeyAlg(key crypto.PublicKey) (string, error) {
	alg, err := keyAlg(key)
	if err != nil {
		return "", fmt.Errorf("jwtauth: %w", err)
	}
	return alg, nil
}

func keyAlg(key crypto.PublicKey) (string, error) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil {
			return "", errors.New("empty RSA key")
		}
		switch bits := k.N.BitLen(); {
		case bits < MinRSABits:
			return "", fmt.Errorf("RSA key of %d bits is shorter than %d", bits, MinRSABits)
		case bits > MaxRSABits:
			return "", fmt.Errorf("RSA key of %d bits is longer than %d", bits, MaxRSABits)
		}
		return AlgRS256, nil
	case *ecdsa.PublicKey:
		if k == nil || k.Curve == nil {
			return "", errors.New("empty EC key")
		}
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("EC key on %s: only P-256 (ES256) is accepted", k.Curve.Params().Name)
		}
		return AlgES256, nil
	}
	return "", fmt.Errorf("unsupported public key type %T: want RSA or EC P-256", key)
}

// StaticKeys is a fixed set of public keys, usually read from a PEM file
// by ParsePEMKeys. PEM keys have no kid of their own, so each is known by
// its RFC 7638 thumbprint (Thumbprint): a token whose kid is a key's
// thumbprint is checked against that key only. Any other token is checked
// against the one key of its algorithm; when the set holds several (a
// file with the current key and the next one, during a rotation), the
// Verifier refuses it rather than try each (see Verifier), so tokens of
// such a set carry their key's thumbprint as kid. Its zero value holds
// no key; it is safe for concurrent use.
type StaticKeys struct {
	byAlg map[string][]crypto.PublicKey
	kids  map[string][]string // byAlg's thumbprints, index for index
}

var _ KeySource = (*StaticKeys)(nil)

// NewStaticKeys returns a source of keys, each of which must be accepted
// by KeyAlg.
func NewStaticKeys(keys ...crypto.PublicKey) (*StaticKeys, error) {
	s := &StaticKeys{byAlg: map[string][]crypto.PublicKey{}, kids: map[string][]string{}}
	for i, k := range keys {
		alg, err := keyAlg(k)
		if err != nil {
			return nil, fmt.Errorf("jwtauth: key %d: %w", i+1, err)
		}
		s.byAlg[alg] = append(s.byAlg[alg], k)
		s.kids[alg] = append(s.kids[alg], thumbprint(k))
	}
	return s, nil
}

// ParsePEMKeys reads every PEM block of data: "PUBLIC KEY" (PKIX),
// "RSA PUBLIC KEY" (PKCS #1) or "CERTIFICATE" (whose public key is used;
// its validity dates and chain are not checked, as the token's own exp
// bounds its use). Other blocks, such as a private key pasted by mistake,
// are an error rather than skipped, and so is a key KeyAlg refuses.
func ParsePEMKeys(data []byte) (*StaticKeys, error) {
	var keys []crypto.PublicKey
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var (
			k   crypto.PublicKey
			err error
		)
		switch b.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(b.Bytes)
		case "RSA PUBLIC KEY":
			k, err = x509.ParsePKCS1PublicKey(b.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				k = c.PublicKey
			}
		default:
			err = fmt.Errorf("type %q: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", b.Type)
		}
		if err == nil {
			_, err = keyAlg(k)
		}
		if err != nil {
			return nil, fmt.Errorf("jwtauth: PEM block %d: %w", n, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	return NewStaticKeys(keys...)
}

// PublicKeys returns the key of alg whose thumbprint is kid, or when
// none is, every key of alg.
func (s *StaticKeys) PublicKeys(alg, kid string) ([]crypto.PublicKey, error) {
	keys := s.byAlg[alg]
	if len(keys) == 0 {
		return nil, ErrUnknownKey
	}
	if kid != "" {
		for i, t := range s.kids[alg] {
			if t == kid {
				return keys[i : i+1], nil
			}
		}
	}
	return keys, nil
}

// Len returns the number of keys held.
func (s *StaticKeys) Len() int {
	n := 0
	for _, ks := range s.byAlg {
		n += len(ks)
	}
	return n
}
