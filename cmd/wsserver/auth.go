package main

// Authentication wiring: the JWT verifier the PrincipalStage is given, the
// public-key source of RS256 and ES256 tokens (a PEM file or a JWKS) and
// its metrics. Tokens are kept out of the logs by internal/redact.

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/jwtauth"
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
		obs, err := newJWKSMetrics(a.registry)
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

// jwksMetrics counts what the JWKS does. Every series exists from the
// start at zero, so an alert on a rate sees the first failure.
type jwksMetrics struct {
	fetches map[string]prometheus.Counter
	keys    prometheus.Gauge
	skipped map[string]prometheus.Counter
	limited prometheus.Counter
}

var _ jwtauth.JWKSObserver = (*jwksMetrics)(nil)

func newJWKSMetrics(reg prometheus.Registerer) (*jwksMetrics, error) {
	fetches := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stompgate_jwks_fetches_total",
		Help: "Fetches of the -jwt-jwks-url key set by result: ok, error (request failed or not 200), too_large, invalid (not a JWK set or no usable key). A failed fetch keeps the last good keys.",
	}, []string{"result"})
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stompgate_jwks_keys_skipped_total",
		Help: "Keys of fetched JWK sets that were not kept, by reason: unusable (not an RSA-2048+ or EC P-256 signing key) or over_limit (beyond the most keys kept).",
	}, []string{"reason"})
	m := &jwksMetrics{
		fetches: map[string]prometheus.Counter{},
		skipped: map[string]prometheus.Counter{},
		keys: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stompgate_jwks_keys",
			Help: "Keys held from the -jwt-jwks-url key set.",
		}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stompgate_jwks_refetch_limited_total",
			Help: "Tokens naming a key the JWK set does not hold, refused without refetching because the last fetch was too recent.",
		}),
	}
	for _, c := range []prometheus.Collector{fetches, skipped, m.keys, m.limited} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("jwks metrics: %w", err)
		}
	}
	for _, r := range []string{jwtauth.JWKSFetchOK, jwtauth.JWKSFetchError, jwtauth.JWKSFetchTooLarge, jwtauth.JWKSFetchInvalid} {
		m.fetches[r] = fetches.WithLabelValues(r)
	}
	for _, r := range []string{jwtauth.JWKSSkipUnusable, jwtauth.JWKSSkipOverLimit} {
		m.skipped[r] = skipped.WithLabelValues(r)
	}
	return m, nil
}

// JWKSFetched counts a fetch and sets the keys held.
func (m *jwksMetrics) JWKSFetched(result string, keys int) {
	if c, ok := m.fetches[result]; ok {
		c.Inc()
	}
	m.keys.Set(float64(keys))
}

// JWKSKeysSkipped counts keys that were not kept.
func (m *jwksMetrics) JWKSKeysSkipped(reason string, n int) {
	if c, ok := m.skipped[reason]; ok {
		c.Add(float64(n))
	}
}

// JWKSRefetchLimited counts a refetch that was not allowed.
func (m *jwksMetrics) JWKSRefetchLimited() { m.limited.Inc() }
