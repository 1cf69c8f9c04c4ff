// Package jwtauth authenticates STOMP sessions with JSON Web Tokens: its
// Verifier is the interceptor.TokenVerifier that a PrincipalStage is given
// to check the token of a CONNECT, or of a token header sent later to
// extend the session.
//
// Three algorithms are accepted, each pinned to one kind of key so a token
// cannot choose how it is checked: HS256 with a shared secret
// (Config.Secret), RS256 and ES256 with public keys (Config.Keys) from a
// PEM file (ParsePEMKeys) or an identity provider's JSON Web Key Set
// (NewJWKS), which is fetched in the background, refreshed, and refetched
// when a token names a key it does not hold.
//
// The package is an adapter: the core packages (stompframe, broker,
// server, and interceptor's Chain and stages) do not import it, so a
// program that authenticates otherwise does not link golang-jwt.
package jwtauth
