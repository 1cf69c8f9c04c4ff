package jwtauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Defaults and bounds of a JWKS. Identity providers publish two to four
// signing keys at a time (the current one, the next, the one before) and
// rotate them over days, so these leave room for that and bound the rest.
const (
	// DefaultJWKSRefresh is how often the key set is fetched again: a
	// key the provider withdrew is honoured at most this long, at a cost
	// of 12 requests an hour per instance.
	DefaultJWKSRefresh = 5 * time.Minute
	// MinJWKSRefresh is the shortest refresh interval accepted: below it
	// a fleet of instances polls the provider for nothing.
	MinJWKSRefresh = 10 * time.Second
	// DefaultJWKSTimeout bounds one fetch. A CONNECT whose token names an
	// unknown key waits for the refetch on its session's reader, so it is
	// below the server's default 10 s CONNECT deadline.
	DefaultJWKSTimeout = 5 * time.Second
	// DefaultJWKSRefetchInterval is the least time between a fetch and one
	// caused by a token naming an unknown kid. A key rotated in between
	// two refreshes is found by the first token that uses it; made-up
	// kids cost the provider at most one request per interval.
	DefaultJWKSRefetchInterval = 30 * time.Second
	// DefaultJWKSMaxKeys is the most keys kept from one document; the
	// rest are counted as skipped. A token without a kid is checked
	// against every key of its algorithm, so this also bounds that work.
	DefaultJWKSMaxKeys = 32
	// DefaultJWKSMaxBytes is the largest document read: 32 RSA-4096 keys
	// with certificate chains fit with room to spare.
	DefaultJWKSMaxBytes = 256 << 10
)

// Results of one JWKS fetch, reported to JWKSObserver.JWKSFetched. A
// failed fetch keeps the keys of the last good one.
const (
	// JWKSFetchOK: the document was read and holds at least one usable
	// key; it replaced the keys held.
	JWKSFetchOK = "ok"
	// JWKSFetchError: the request failed, timed out or was answered with
	// a status other than 200.
	JWKSFetchError = "error"
	// JWKSFetchTooLarge: the document exceeds JWKSConfig.MaxBytes.
	JWKSFetchTooLarge = "too_large"
	// JWKSFetchInvalid: the document is not a JWK set (RFC 7517 5) or
	// holds no usable key.
	JWKSFetchInvalid = "invalid"
)

// Reasons a key of a fetched document was not kept, reported to
// JWKSObserver.JWKSKeysSkipped.
const (
	// JWKSSkipUnusable: not an RSA or P-256 signing key KeyAlg accepts,
	// its "alg" is not the one its type allows, its "use" is not "sig",
	// or it does not decode.
	JWKSSkipUnusable = "unusable"
	// JWKSSkipOverLimit: beyond JWKSConfig.MaxKeys usable keys.
	JWKSSkipOverLimit = "over_limit"
)

// JWKSObserver is told what a JWKS does, for metrics. Its methods are
// called from the fetching goroutine and from sessions' reader goroutines.
type JWKSObserver interface {
	// JWKSFetched reports each fetch's result (JWKSFetchOK or a failure)
	// and the number of keys held afterwards.
	JWKSFetched(result string, keys int)
	// JWKSKeysSkipped reports n keys of a fetched document that were not
	// kept, for reason JWKSSkipUnusable or JWKSSkipOverLimit.
	JWKSKeysSkipped(reason string, n int)
	// JWKSRefetchLimited reports a token naming an unknown key while a
	// refetch was not yet allowed (JWKSConfig.RefetchInterval); the token
	// is refused.
	JWKSRefetchLimited()
}

// JWKSConfig configures a JWKS. Only URL is required; every other zero
// field takes its default.
type JWKSConfig struct {
	// URL is where the JWK set is fetched from (http or https), the
	// provider's jwks_uri. It is never logged with its query or user
	// information, which may hold credentials.
	URL string
	// Client makes the requests; nil means a client of its own with
	// http.DefaultTransport's settings. Each fetch is bounded by Timeout
	// whatever the client.
	Client *http.Client
	// Refresh is how often the set is fetched again. Zero means
	// DefaultJWKSRefresh; below MinJWKSRefresh is an error.
	Refresh time.Duration
	// Timeout bounds one fetch, reading the body included. Zero means
	// DefaultJWKSTimeout; negative is an error.
	Timeout time.Duration
	// RefetchInterval is the least time between any fetch and one caused
	// by a token whose key is not held. Zero means
	// DefaultJWKSRefetchInterval; negative is an error.
	RefetchInterval time.Duration
	// MaxKeys is the most keys kept from one document. Zero means
	// DefaultJWKSMaxKeys; negative is an error.
	MaxKeys int
	// MaxBytes is the largest document accepted. Zero means
	// DefaultJWKSMaxBytes; negative is an error.
	MaxBytes int64
	// Now is the clock of the refetch rate limit; nil means time.Now. The
	// periodic refresh runs on a real ticker.
	Now func() time.Time
	// Logger gets one line when fetching starts failing and one when it
	// works again, not one per failure; nil means slog.Default().
	Logger *slog.Logger
	// Observer is told about every fetch; nil is allowed.
	Observer JWKSObserver
}

// JWKS is a KeySource that holds the keys of a JSON Web Key Set (RFC 7517)
// fetched over HTTP: once at start, then every Refresh, and again (at most
// once per RefetchInterval) when a token names a kid it does not hold. A
// failed fetch keeps the last good keys, so a provider outage does not
// lock users out while their tokens are valid.
//
// Build it with NewJWKS and end it with Close. It is safe for concurrent
// use.
type JWKS struct {
	cfg    JWKSConfig
	client *http.Client
	logURL string // cfg.URL without user information and query

	ctx    context.Context // ends at Close; every fetch runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the refresh loop and every fetch goroutine

	mu sync.Mutex
	// Guarded by mu.
	keys        []jwksKey
	lastAttempt time.Time     // start of the latest fetch
	inflight    chan struct{} // closed when the fetch under way ends; nil if none
	lastErr     error         // of the latest fetch
	failing     bool          // the latest fetch failed (logged once per change)
	closed      bool
	// first is closed when the fetch New started has ended.
	first <-chan struct{}
}

var _ KeySource = (*JWKS)(nil)

// jwksKey is one usable key of the set.
type jwksKey struct {
	kid string
	alg string // AlgRS256 or AlgES256
	key crypto.PublicKey
}

// NewJWKS validates cfg, starts fetching the key set in the background and
// returns at once: a token that arrives before the first fetch ends waits
// for it (at most Timeout). Call Close to stop.
func NewJWKS(cfg JWKSConfig) (*JWKS, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configErrorf("JWKSConfig.URL must be an absolute http or https URL")
	}
	switch {
	case cfg.Refresh == 0:
		cfg.Refresh = DefaultJWKSRefresh
	case cfg.Refresh < MinJWKSRefresh:
		return nil, configErrorf("JWKSConfig.Refresh %v is below the minimum %v", cfg.Refresh, MinJWKSRefresh)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &cfg.Timeout, DefaultJWKSTimeout},
		{"RefetchInterval", &cfg.RefetchInterval, DefaultJWKSRefetchInterval},
	} {
		if *d.v < 0 {
			return nil, configErrorf("JWKSConfig.%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	switch {
	case cfg.MaxKeys < 0:
		return nil, configErrorf("JWKSConfig.MaxKeys %d is negative", cfg.MaxKeys)
	case cfg.MaxKeys == 0:
		cfg.MaxKeys = DefaultJWKSMaxKeys
	}
	switch {
	case cfg.MaxBytes < 0:
		return nil, configErrorf("JWKSConfig.MaxBytes %d is negative", cfg.MaxBytes)
	case cfg.MaxBytes == 0:
		cfg.MaxBytes = DefaultJWKSMaxBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	j := &JWKS{cfg: cfg, client: cfg.Client, logURL: redactURL(u)}
	if j.client == nil {
		j.client = &http.Client{}
	}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	j.mu.Lock()
	first := j.fetchLocked()
	j.first = first
	j.mu.Unlock()
	j.wg.Add(1)
	go j.refreshLoop(first)
	return j, nil
}

// redactURL is u without user information and query, for logs.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	return c.String()
}

// refreshLoop fetches every Refresh after the first fetch ended, until
// Close.
func (j *JWKS) refreshLoop(first <-chan struct{}) {
	defer j.wg.Done()
	select {
	case <-first:
	case <-j.ctx.Done():
		return
	}
	t := time.NewTicker(j.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = j.Refresh(j.ctx)
		case <-j.ctx.Done():
			return
		}
	}
}

// Refresh fetches the key set now, or waits for the fetch already under
// way, and returns that fetch's error. ctx bounds the wait only: the fetch
// itself is bounded by Timeout and goes on if ctx ends first.
func (j *JWKS) Refresh(ctx context.Context) error {
	j.mu.Lock()
	done := j.fetchLocked()
	j.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.lastErr
}

// PublicKeys returns the held keys of alg whose kid is kid; a key without
// a kid matches any, and an empty kid matches every key of alg. When none
// matches, it refetches the set (or joins the fetch under way) and looks
// again, unless the latest fetch started less than RefetchInterval ago,
// in which case it returns ErrUnknownKey at once.
func (j *JWKS) PublicKeys(alg, kid string) ([]crypto.PublicKey, error) {
	j.mu.Lock()
	if keys := j.matchLocked(alg, kid); len(keys) > 0 {
		j.mu.Unlock()
		return keys, nil
	}
	var done <-chan struct{} = j.inflight
	if j.inflight == nil {
		if !j.lastAttempt.IsZero() && j.cfg.Now().Sub(j.lastAttempt) < j.cfg.RefetchInterval {
			j.mu.Unlock()
			if j.cfg.Observer != nil {
				j.cfg.Observer.JWKSRefetchLimited()
			}
			return nil, ErrUnknownKey
		}
		done = j.fetchLocked()
	}
	j.mu.Unlock()
	<-done // bounded by the fetch's Timeout, or by Close
	j.mu.Lock()
	defer j.mu.Unlock()
	if keys := j.matchLocked(alg, kid); len(keys) > 0 {
		return keys, nil
	}
	return nil, ErrUnknownKey
}

// Len returns the number of keys held.
func (j *JWKS) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.keys)
}

// Close stops fetching, cancels a fetch under way and waits for it. It is
// idempotent; the keys held still answer PublicKeys afterwards.
func (j *JWKS) Close() {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	j.cancel()
	j.wg.Wait()
}

func (j *JWKS) matchLocked(alg, kid string) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range j.keys {
		if k.alg == alg && (kid == "" || k.kid == "" || k.kid == kid) {
			out = append(out, k.key)
		}
	}
	return out
}

// fetchLocked starts a fetch unless one is under way, and returns the
// channel closed when it ends. After Close it starts none and returns a
// closed channel.
func (j *JWKS) fetchLocked() <-chan struct{} {
	if j.inflight != nil {
		return j.inflight
	}
	done := make(chan struct{})
	if j.closed {
		close(done)
		return done
	}
	j.inflight = done
	j.lastAttempt = j.cfg.Now()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		keys, skipped, result, err := j.fetch()
		j.store(keys, skipped, result, err)
		j.mu.Lock()
		j.inflight = nil
		j.mu.Unlock()
		close(done)
	}()
	return done
}

// store keeps the result of one fetch, reports it, and logs a change
// between working and failing.
func (j *JWKS) store(keys []jwksKey, skipped map[string]int, result string, err error) {
	j.mu.Lock()
	if err == nil {
		j.keys = keys
	}
	j.lastErr = err
	held := len(j.keys)
	was := j.failing
	j.failing = err != nil
	j.mu.Unlock()

	if o := j.cfg.Observer; o != nil {
		o.JWKSFetched(result, held)
		for _, reason := range []string{JWKSSkipUnusable, JWKSSkipOverLimit} {
			if n := skipped[reason]; n > 0 {
				o.JWKSKeysSkipped(reason, n)
			}
		}
	}
	switch {
	case err != nil && !was:
		j.cfg.Logger.Warn("jwtauth: JWKS fetch failing, keeping the last good keys",
			"url", j.logURL, "keys", held, "err", err)
	case err == nil && was:
		j.cfg.Logger.Info("jwtauth: JWKS fetch works again", "url", j.logURL, "keys", held)
	}
}

// fetch reads and decodes the key set once.
func (j *JWKS) fetch() (keys []jwksKey, skipped map[string]int, result string, err error) {
	ctx, cancel := context.WithTimeout(j.ctx, j.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.cfg.URL, nil)
	if err != nil {
		return nil, nil, JWKSFetchError, fmt.Errorf("jwtauth: JWKS request: %w", err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may carry credentials.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, JWKSFetchError, fmt.Errorf("jwtauth: JWKS fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, JWKSFetchError, fmt.Errorf("jwtauth: JWKS fetch: HTTP status %d", resp.StatusCode)
	}
	if resp.ContentLength > j.cfg.MaxBytes {
		return nil, nil, JWKSFetchTooLarge, fmt.Errorf("jwtauth: JWKS document of %d bytes exceeds MaxBytes %d", resp.ContentLength, j.cfg.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, j.cfg.MaxBytes+1))
	if err != nil {
		return nil, nil, JWKSFetchError, fmt.Errorf("jwtauth: JWKS read: %w", err)
	}
	if int64(len(body)) > j.cfg.MaxBytes {
		return nil, nil, JWKSFetchTooLarge, fmt.Errorf("jwtauth: JWKS document exceeds MaxBytes %d", j.cfg.MaxBytes)
	}
	keys, skipped, err = parseJWKS(body, j.cfg.MaxKeys)
	if err != nil {
		return nil, skipped, JWKSFetchInvalid, err
	}
	return keys, skipped, JWKSFetchOK, nil
}

// jwk is the part of a JSON Web Key (RFC 7517 4, RFC 7518 6) that RSA and
// EC P-256 signing keys use.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS decodes a JWK set and keeps at most max usable keys, in
// document order. A set with no usable key is an error.
func parseJWKS(body []byte, max int) ([]jwksKey, map[string]int, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, nil, fmt.Errorf("jwtauth: JWKS document: %w", err)
	}
	skipped := map[string]int{}
	var keys []jwksKey
	for _, raw := range set.Keys {
		if len(keys) == max {
			skipped[JWKSSkipOverLimit]++
			continue
		}
		k, err := parseJWK(raw)
		if err != nil {
			skipped[JWKSSkipUnusable]++
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, skipped, fmt.Errorf("jwtauth: JWKS document holds no usable key (%d keys, none RSA or EC P-256 for signing)", len(set.Keys))
	}
	return keys, skipped, nil
}

// parseJWK decodes one key and checks that it may sign tokens with the one
// algorithm its type allows.
func parseJWK(raw json.RawMessage) (jwksKey, error) {
	var k jwk
	if err := json.Unmarshal(raw, &k); err != nil {
		return jwksKey{}, err
	}
	if k.Use != "" && k.Use != "sig" {
		return jwksKey{}, fmt.Errorf("use %q", k.Use)
	}
	var pub crypto.PublicKey
	switch k.Kty {
	case "RSA":
		n, err := b64Int(k.N)
		if err != nil {
			return jwksKey{}, fmt.Errorf("n: %w", err)
		}
		e, err := b64Int(k.E)
		if err != nil {
			return jwksKey{}, fmt.Errorf("e: %w", err)
		}
		if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 || e.Bit(0) == 0 {
			return jwksKey{}, errors.New("e out of range")
		}
		pub = &rsa.PublicKey{N: n, E: int(e.Int64())}
	case "EC":
		if k.Crv != "P-256" {
			return jwksKey{}, fmt.Errorf("crv %q", k.Crv)
		}
		x, errX := base64.RawURLEncoding.DecodeString(k.X)
		y, errY := base64.RawURLEncoding.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return jwksKey{}, errors.New("x, y: want 32 bytes each")
		}
		p, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwksKey{}, err
		}
		pub = p
	default:
		return jwksKey{}, fmt.Errorf("kty %q", k.Kty)
	}
	alg, err := keyAlg(pub)
	if err != nil {
		return jwksKey{}, err
	}
	if k.Alg != "" && k.Alg != alg {
		return jwksKey{}, fmt.Errorf("alg %q on a key for %s", k.Alg, alg)
	}
	return jwksKey{kid: k.Kid, alg: alg, key: pub}, nil
}

// b64Int decodes an unpadded base64url big-endian unsigned integer
// (RFC 7518 2, "Base64urlUInt").
func b64Int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, errors.New("empty")
	}
	return new(big.Int).SetBytes(b), nil
}
