package metrics

import "github.com/prometheus/client_golang/prometheus"

// The results of a JWKS fetch and the reasons a fetched key is not kept.
// They are spelled here rather than taken from package jwtauth, so that
// metrics imports no other adapter; TestJWKSLabels keeps the two the same.
var (
	jwksFetchResults = []string{"ok", "error", "too_large", "invalid"}
	jwksSkipReasons  = []string{"unusable", "over_limit"}
)

// JWKS counts what the key set of a JWKS does (jwtauth.JWKSObserver).
// Its collectors are registered by NewJWKS only, on a program that
// fetches a key set, so that one without it shows no JWKS series; every
// series exists from the start at zero, so an alert on a rate sees the
// first failure. A nil *JWKS is valid and counts nothing. JWKS is safe
// for concurrent use.
type JWKS struct {
	fetches map[string]prometheus.Counter
	keys    prometheus.Gauge
	skipped map[string]prometheus.Counter
	limited prometheus.Counter
}

// NewJWKS registers the JWKS collectors on reg. On an error (a name
// already registered) it unregisters what it registered and returns an
// error that unwraps to ErrRegister.
func NewJWKS(reg prometheus.Registerer) (*JWKS, error) {
	b := &builder{reg: reg}
	fetches := b.counterVec("stompgate_jwks_fetches_total",
		"Fetches of the -jwt-jwks-url key set by result: ok, error (request failed or not 200), too_large, invalid (not a JWK set or no usable key). A failed fetch keeps the last good keys.", "result")
	skipped := b.counterVec("stompgate_jwks_keys_skipped_total",
		"Keys of fetched JWK sets that were not kept, by reason: unusable (not an RSA-2048+ or EC P-256 signing key) or over_limit (beyond the most keys kept).", "reason")
	m := &JWKS{
		fetches: map[string]prometheus.Counter{},
		skipped: map[string]prometheus.Counter{},
		keys:    b.gauge("stompgate_jwks_keys", "Keys held from the -jwt-jwks-url key set."),
		limited: b.counter("stompgate_jwks_refetch_limited_total",
			"Tokens naming a key the JWK set does not hold, refused without refetching because the last fetch was too recent."),
	}
	if b.err != nil {
		b.rollback()
		return nil, b.err
	}
	for _, r := range jwksFetchResults {
		m.fetches[r] = fetches.WithLabelValues(r)
	}
	for _, r := range jwksSkipReasons {
		m.skipped[r] = skipped.WithLabelValues(r)
	}
	return m, nil
}

// JWKSFetched counts a fetch by its result and sets the keys held. A
// result outside the known set is not counted.
func (m *JWKS) JWKSFetched(result string, keys int) {
	if m == nil {
		return
	}
	if c, ok := m.fetches[result]; ok {
		c.Inc()
	}
	m.keys.Set(float64(keys))
}

// JWKSKeysSkipped counts n keys that were not kept, by reason. A reason
// outside the known set is not counted.
func (m *JWKS) JWKSKeysSkipped(reason string, n int) {
	if m == nil {
		return
	}
	if c, ok := m.skipped[reason]; ok {
		c.Add(float64(n))
	}
}

// JWKSRefetchLimited counts a refetch that was not allowed.
func (m *JWKS) JWKSRefetchLimited() {
	if m == nil {
		return
	}
	m.limited.Inc()
}
