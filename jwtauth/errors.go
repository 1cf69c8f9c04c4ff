package jwtauth

import "errors"

// ErrUnknownKey is returned by a KeySource that holds no key for a
// token's algorithm and key id. The token is refused; with a JWKS, the
// key set may have been refetched first (see JWKSConfig.RefetchInterval).
var ErrUnknownKey = errors.New("jwtauth: no key for the token's algorithm and key id")

// ErrNoKeys is returned by ParsePEMKeys for data that holds no public key
// or certificate.
var ErrNoKeys = errors.New("jwtauth: no public key or certificate in the PEM data")
