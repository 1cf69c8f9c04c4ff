package main

// Authentication wiring: the JWT verifier the PrincipalStage is given, the
// public-key source of RS256 and ES256 tokens (a PEM file or a JWKS) and
// its metrics. Tokens are kept out of the logs by internal/redact.

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/jwtauth"
	"github.com/stompgate/stompgate/metrics"
)

// validateAuth checks the JWT settings; validate calls it.
func (s *settings) validateAuth() error {
	if s.authRequired && s.jwtSecret == "" && s.jwtPublicKey == "" && s.jwtJWKSURL == "" {
		return fmt.Errorf("-auth-required (%s) needs -jwt-secret (%s), -jwt-public-key (%s) or -jwt-jwks-url (%s)",
			envName("auth-required"), envName("jwt-secret"), envName("jwt-public-key"), envName("jwt-jwks-url"))
	}
	if s.jwtPublicKey != "" && s.jwtJWKSURL != "" {
		return fmt.Errorf("-jwt-public-key (%s) and -jwt-jwks-url (%s): set one of them, not both",
			envName("jwt-public-key"), envName("jwt-jwks-url"))
	}
	if s.jwtJWKSURL != "" {
		// The value is not repeated: it may carry credentials.
		u, err := url.Parse(s.jwtJWKSURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-jwt-jwks-url (%s): want an absolute http or https URL", envName("jwt-jwks-url"))
		}
	}
	if s.jwtJWKSRefresh < jwtauth.MinJWKSRefresh {
		return fmt.Errorf("-jwt-jwks-refresh (%s) %v: must be at least %v",
			envName("jwt-jwks-refresh"), s.jwtJWKSRefresh, jwtauth.MinJWKSRefresh)
	}
	return nil
}

// newKeySource returns the keys of -jwt-public-key or -jwt-jwks-url, or
// nil when neither is set. A JWKS starts fetching at once and is closed by
// app.close; a provider that is down at start-up is logged, not fatal:
// tokens it signs are refused until a fetch succeeds.
func (a *app) newKeySource(st *settings, logger *slog.Logger) (jwtauth.KeySource, error) {
	switch {
	case st.jwtPublicKey != "":
		data, err := os.ReadFile(st.jwtPublicKey)
		if err != nil {
			return nil, fmt.Errorf("-jwt-public-key (%s): %w", envName("jwt-public-key"), err)
		}
		keys, err := jwtauth.ParsePEMKeys(data)
		if err != nil {
			return nil, fmt.Errorf("-jwt-public-key (%s) %q: %w", envName("jwt-public-key"), st.jwtPublicKey, err)
		}
		return keys, nil
	case st.jwtJWKSURL != "":
		obs, err := metrics.NewJWKS(a.registry)
		if err != nil {
			return nil, err
		}
		j, err := jwtauth.NewJWKS(jwtauth.JWKSConfig{
			URL:      st.jwtJWKSURL,
			Refresh:  st.jwtJWKSRefresh,
			Logger:   logger,
			Observer: obs,
		})
		if err != nil {
			return nil, fmt.Errorf("-jwt-jwks-url / -jwt-jwks-refresh: %w", err)
		}
		a.jwks = j
		return j, nil
	}
	return nil, nil
}

// tokenVerifier returns the verifier of -jwt-secret and keys (the keys of
// -jwt-public-key or -jwt-jwks-url, nil without them), or nil when neither
// is set: every session is then anonymous.
func tokenVerifier(st *settings, keys jwtauth.KeySource) (interceptor.TokenVerifier, error) {
	if st.jwtSecret == "" && keys == nil {
		return nil, nil
	}
	v, err := jwtauth.New(jwtauth.Config{Secret: []byte(st.jwtSecret), Keys: keys})
	if err != nil {
		return nil, fmt.Errorf("-jwt-secret / -jwt-public-key / -jwt-jwks-url: %w", err)
	}
	return v, nil
}
