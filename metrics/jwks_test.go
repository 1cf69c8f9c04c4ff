package metrics

import (
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stompgate/stompgate/jwtauth"
)

var _ jwtauth.JWKSObserver = (*JWKS)(nil)

// TestJWKSLabels: the labels spelled here are jwtauth's, every one.
func TestJWKSLabels(t *testing.T) {
	t.Parallel()
	if want := []string{jwtauth.JWKSFetchOK, jwtauth.JWKSFetchError, jwtauth.JWKSFetchTooLarge, jwtauth.JWKSFetchInvalid}; !slices.Equal(jwksFetchResults, want) {
		t.Errorf("jwksFetchResults = %q, want %q", jwksFetchResults, want)
	}
	if want := []string{jwtauth.JWKSSkipUnusable, jwtauth.JWKSSkipOverLimit}; !slices.Equal(jwksSkipReasons, want) {
		t.Errorf("jwksSkipReasons = %q, want %q", jwksSkipReasons, want)
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m, err := NewJWKS(reg)
	if err != nil {
		t.Fatalf("NewJWKS: %v", err)
	}
	if got := sample(t, reg, "stompgate_jwks_fetches_total", "result", jwtauth.JWKSFetchError); got != 0 {
		t.Errorf("fetches{error} before any fetch = %v, want 0", got)
	}
	m.JWKSFetched(jwtauth.JWKSFetchOK, 3)
	m.JWKSFetched("unknown", 2)
	m.JWKSKeysSkipped(jwtauth.JWKSSkipOverLimit, 4)
	m.JWKSRefetchLimited()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"stompgate_jwks_fetches_total", []string{"result", "ok"}, 1},
		{"stompgate_jwks_keys", nil, 2},
		{"stompgate_jwks_keys_skipped_total", []string{"reason", "over_limit"}, 4},
		{"stompgate_jwks_keys_skipped_total", []string{"reason", "unusable"}, 0},
		{"stompgate_jwks_refetch_limited_total", nil, 1},
	} {
		if got := sample(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%q = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, err := NewJWKS(reg); !errors.Is(err, ErrRegister) {
		t.Errorf("NewJWKS on the same registry: %v, want ErrRegister", err)
	}
	var nilJWKS *JWKS
	nilJWKS.JWKSFetched(jwtauth.JWKSFetchOK, 1)
	nilJWKS.JWKSKeysSkipped(jwtauth.JWKSSkipUnusable, 1)
	nilJWKS.JWKSRefetchLimited()
}
