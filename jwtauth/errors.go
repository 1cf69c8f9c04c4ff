package jwtauth

import (
	"errors"

	"github.com/stompgate/stompgate/internal/configerr"
)

// ErrUnknownKey is returned by a KeySource that holds no key for a
// token's algorithm and key id. The token is refused; with a JWKS, the
// key set may have been refetched first (see JWKSConfig.RefetchInterval).
var ErrUnknownKey = errors.New("jwtauth: no key for the token's algorithm and key id")

// ErrNoKeys is returned by ParsePEMKeys for data that holds no public key
// or certificate.
var ErrNoKeys = errors.New("jwtauth: no public key or certificate in the PEM data")

// ErrAmbiguousKey is returned for a token that several configured keys
// could verify: it names no kid that picks one of them. The Verifier
// tries at most one key per token, so that a token cannot make it spend
// a signature check on every key (8 RSA keys cost 5 times one check);
// give each token the kid of the key that signed it.
var ErrAmbiguousKey = errors.New("jwtauth: several keys could verify the token and its kid picks none of them")

// ErrInvalidConfig is wrapped by every error New and NewJWKS return for
// a bad setting; the message names the setting and its value.
var ErrInvalidConfig = errors.New("jwtauth: invalid configuration")

// configErrorf reports a bad setting; format starts with its name and
// value.
func configErrorf(format string, args ...any) error {
	return configerr.Errorf(ErrInvalidConfig, "jwtauth: ", format, args...)
}
