package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/syncbuf"
)

// jwksServer serves a JWK set that a test can change, and counts the
// requests it answers.
type jwksServer struct {
	*httptest.Server
	mu       sync.Mutex
	doc      string
	status   int
	chunked  bool // flush mid-body, so no Content-Length is sent
	requests int
}

func newJWKSServer(t *testing.T, keys ...map[string]any) *jwksServer {
	t.Helper()
	js := &jwksServer{status: http.StatusOK}
	js.set(keys...)
	js.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		js.mu.Lock()
		js.requests++
		doc, status, chunked := js.doc, js.status, js.chunked
		js.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(status)
		if chunked {
			half := len(doc) / 2
			_, _ = w.Write([]byte(doc[:half]))
			w.(http.Flusher).Flush()
			doc = doc[half:]
		}
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(js.Close)
	return js
}

// set replaces the served document with a set of keys.
func (js *jwksServer) set(keys ...map[string]any) {
	doc, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	js.setDoc(string(doc), http.StatusOK)
}

func (js *jwksServer) setDoc(doc string, status int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.doc, js.status = doc, status
}

func (js *jwksServer) count() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.requests
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// rsaJWK is pub as a JWK with kid, plus extra members.
func rsaJWK(kid string, pub *rsa.PublicKey, extra ...string) map[string]any {
	m := map[string]any{"kty": "RSA", "kid": kid, "n": b64u(pub.N.Bytes()), "e": b64u(big.NewInt(int64(pub.E)).Bytes())}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// ecJWK is pub as a JWK with kid.
func ecJWK(kid string, pub *ecdsa.PublicKey) map[string]any {
	b, err := pub.Bytes()
	if err != nil {
		panic(err)
	}
	n := (len(b) - 1) / 2
	return map[string]any{"kty": "EC", "kid": kid, "crv": pub.Curve.Params().Name, "x": b64u(b[1 : 1+n]), "y": b64u(b[1+n:])}
}

// jwksEvents records what a JWKS reports.
type jwksEvents struct {
	mu      sync.Mutex
	fetched []string
	held    int
	skipped map[string]int
	limited int
}

func (e *jwksEvents) JWKSFetched(result string, keys int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fetched = append(e.fetched, result)
	e.held = keys
}

func (e *jwksEvents) JWKSKeysSkipped(reason string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.skipped == nil {
		e.skipped = map[string]int{}
	}
	e.skipped[reason] += n
}

func (e *jwksEvents) JWKSRefetchLimited() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.limited++
}

func (e *jwksEvents) results() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.fetched)
}

// newJWKS builds a JWKS on cfg and waits for its first fetch; it is
// closed when the test ends.
func newJWKS(t *testing.T, cfg JWKSConfig) *JWKS {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	j, err := NewJWKS(cfg)
	if err != nil {
		t.Fatalf("NewJWKS: %v", err)
	}
	t.Cleanup(j.Close)
	// Wait for the fetch New started; a Refresh here would start a
	// second one when the first had already ended.
	select {
	case <-j.first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first JWKS fetch did not end")
	}
	return j
}

func TestJWKSVerifiesTokens(t *testing.T) {
	testKeys(t)
	t.Parallel()
	js := newJWKSServer(t, rsaJWK("r1", &rsaKey.PublicKey, "alg", "RS256", "use", "sig"), ecJWK("e1", &ecKey.PublicKey))
	j := newJWKS(t, JWKSConfig{URL: js.URL})
	p := newPrincipalStage(t, stageConfig{Keys: j, Required: true})
	claims := validClaims("alice", nil)
	tests := []struct {
		name   string
		token  string
		wantOK bool
	}{
		{"RS256 r1", signWith(t, jwt.SigningMethodRS256, rsaKey, "r1", claims), true},
		{"ES256 e1", signWith(t, jwt.SigningMethodES256, ecKey, "e1", claims), true},
		{"RS256 without kid", signWith(t, jwt.SigningMethodRS256, rsaKey, "", claims), true},
		{"RS256 naming the EC key", signWith(t, jwt.SigningMethodRS256, rsaKey, "e1", claims), false},
		{"RS256 r1 by another key", signWith(t, jwt.SigningMethodRS256, rsaKey2, "r1", claims), false},
		{"HS256 over the JWK's n", sign(t, []byte(b64u(rsaKey.N.Bytes())), claims), false},
	}
	for _, tt := range tests {
		r := p.Handle(&interceptor.Session{ID: "1"}, frame("CONNECT", "passcode", tt.token), t0)
		if (r.Outcome == interceptor.Pass) != tt.wantOK {
			t.Errorf("%s: Handle(CONNECT) = %+v, want pass %v", tt.name, r, tt.wantOK)
		}
	}
}

// TestJWKSUnknownKid: a token naming a kid the set does not hold causes a
// refetch, at most once per RefetchInterval; in between, it is refused
// without asking the provider.
func TestJWKSUnknownKid(t *testing.T) {
	testKeys(t)
	t.Parallel()
	js := newJWKSServer(t, rsaJWK("r1", &rsaKey.PublicKey))
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	at := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = t0.Add(d) }
	ev := &jwksEvents{}
	j := newJWKS(t, JWKSConfig{URL: js.URL, RefetchInterval: 30 * time.Second, Now: clock, Observer: ev})

	type step struct {
		at       time.Duration
		kid      string
		rotate   bool // the provider publishes r2 before this step
		wantKeys int
		requests int // provider requests after the step
		limited  int // refetches refused so far
	}
	for i, st := range []step{
		{at: 0, kid: "r1", wantKeys: 1, requests: 1},
		{at: time.Second, kid: "r2", requests: 1, limited: 1},
		{at: 29 * time.Second, kid: "r2", rotate: true, requests: 1, limited: 2},
		{at: 30 * time.Second, kid: "r2", wantKeys: 1, requests: 2, limited: 2},
		{at: 31 * time.Second, kid: "r3", requests: 2, limited: 3},
		{at: 31 * time.Second, kid: "r1", wantKeys: 1, requests: 2, limited: 3},
		{at: 61 * time.Second, kid: "", wantKeys: 2, requests: 2, limited: 3},
	} {
		if st.rotate {
			js.set(rsaJWK("r1", &rsaKey.PublicKey), rsaJWK("r2", &rsaKey2.PublicKey))
		}
		at(st.at)
		keys, err := j.PublicKeys(AlgRS256, st.kid)
		if len(keys) != st.wantKeys || (st.wantKeys == 0) != errors.Is(err, ErrUnknownKey) {
			t.Errorf("step %d: PublicKeys(RS256, %q) at t0+%v = %d keys, %v; want %d", i, st.kid, st.at, len(keys), err, st.wantKeys)
		}
		if got := js.count(); got != st.requests {
			t.Errorf("step %d: provider requests = %d, want %d", i, got, st.requests)
		}
		ev.mu.Lock()
		limited := ev.limited
		ev.mu.Unlock()
		if limited != st.limited {
			t.Errorf("step %d: refetches limited = %d, want %d", i, limited, st.limited)
		}
	}
	if keys, _ := j.PublicKeys(AlgES256, ""); len(keys) != 0 {
		t.Errorf("PublicKeys(ES256) = %d keys from an RSA-only set, want 0", len(keys))
	}
}

// TestJWKSKeepsLastGoodKeys: every kind of failed fetch keeps the keys
// of the last good one, is counted under its result, and is logged once
// when fetching starts failing and once when it works again. The URL's
// credentials never reach the log.
func TestJWKSKeepsLastGoodKeys(t *testing.T) {
	testKeys(t)
	t.Parallel()
	good := rsaJWK("r1", &rsaKey.PublicKey)
	js := newJWKSServer(t, good)
	var logs syncbuf.Buffer
	ev := &jwksEvents{}
	url := strings.Replace(js.URL, "http://", "http://user:pw-SECRET@", 1) + "/jwks?api_key=q-SECRET"
	j := newJWKS(t, JWKSConfig{
		URL:      url,
		MaxBytes: 512,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Observer: ev,
	})
	tok := signWith(t, jwt.SigningMethodRS256, rsaKey, "r1", validClaims("alice", nil))
	p := newPrincipalStage(t, stageConfig{Keys: j})

	steps := []struct {
		name   string
		doc    string
		status int
		chunk  bool
		result string
	}{
		{"server error", "oops", http.StatusInternalServerError, false, JWKSFetchError},
		{"not found", "", http.StatusNotFound, false, JWKSFetchError},
		{"not JSON", "<html>", http.StatusOK, false, JWKSFetchInvalid},
		{"no keys", `{"keys":[]}`, http.StatusOK, false, JWKSFetchInvalid},
		{"only unusable keys", `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, http.StatusOK, false, JWKSFetchInvalid},
		{"too large, with Content-Length", `{"keys":[],"pad":"` + strings.Repeat("x", 600) + `"}`, http.StatusOK, false, JWKSFetchTooLarge},
		{"too large, chunked", `{"keys":[],"pad":"` + strings.Repeat("x", 600) + `"}`, http.StatusOK, true, JWKSFetchTooLarge},
	}
	for _, st := range steps {
		js.setDoc(st.doc, st.status)
		js.mu.Lock()
		js.chunked = st.chunk
		js.mu.Unlock()
		if err := j.Refresh(context.Background()); err == nil {
			t.Errorf("%s: Refresh = nil, want an error", st.name)
		}
		if got := j.Len(); got != 1 {
			t.Errorf("%s: %d keys held, want the last good 1", st.name, got)
		}
		if r := p.Handle(&interceptor.Session{ID: "1"}, frame("CONNECT", "passcode", tok), t0); r.Outcome != interceptor.Pass {
			t.Errorf("%s: CONNECT with a token of the kept key = %+v, want pass", st.name, r)
		}
		if res := ev.results(); res[len(res)-1] != st.result {
			t.Errorf("%s: fetch result %q, want %q", st.name, res[len(res)-1], st.result)
		}
	}
	js.set(good)
	js.mu.Lock()
	js.chunked = false
	js.mu.Unlock()
	if err := j.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh after recovery: %v", err)
	}
	if err := j.Refresh(context.Background()); err != nil {
		t.Fatalf("second Refresh after recovery: %v", err)
	}

	out := logs.String()
	if n := strings.Count(out, "JWKS fetch failing"); n != 1 {
		t.Errorf("%d lines say fetching fails, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "JWKS fetch works again"); n != 1 {
		t.Errorf("%d lines say fetching works again, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("%d log lines, want 2:\n%s", n, out)
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("the log shows the URL's credentials:\n%s", out)
	}
	if !strings.Contains(out, js.URL+"/jwks") {
		t.Errorf("the log does not name the URL %s/jwks:\n%s", js.URL, out)
	}
	want := []string{JWKSFetchOK}
	for _, st := range steps {
		want = append(want, st.result)
	}
	want = append(want, JWKSFetchOK, JWKSFetchOK)
	if got := ev.results(); !slices.Equal(got, want) {
		t.Errorf("fetch results %q, want %q", got, want)
	}
}

func TestJWKSSkipsKeys(t *testing.T) {
	testKeys(t)
	t.Parallel()
	js := newJWKSServer(t,
		map[string]any{"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
		rsaJWK("r1", &rsaKey.PublicKey),
		ecJWK("p384", &ecBad.PublicKey),
		rsaJWK("short", &rsaShort.PublicKey),
		rsaJWK("enc", &rsaKey.PublicKey, "use", "enc"),
		rsaJWK("wrong-alg", &rsaKey.PublicKey, "alg", "ES256"),
		rsaJWK("hs", &rsaKey.PublicKey, "alg", "HS256"),
		map[string]any{"kty": "RSA", "kid": "bad-n", "n": "!!", "e": "AQAB"},
		map[string]any{"kty": "RSA", "kid": "even-e", "n": b64u(rsaKey.N.Bytes()), "e": "Ag"},
		map[string]any{"kty": "EC", "kid": "off-curve", "crv": "P-256", "x": b64u(make([]byte, 32)), "y": b64u(make([]byte, 32))},
		ecJWK("e1", &ecKey.PublicKey),
		rsaJWK("r2", &rsaKey2.PublicKey, "alg", "RS256", "use", "sig"),
		ecJWK("e2", &ecKey2.PublicKey),
		rsaJWK("r3", &rsaKey.PublicKey),
	)
	ev := &jwksEvents{}
	j := newJWKS(t, JWKSConfig{URL: js.URL, MaxKeys: 3, Observer: ev})
	if got := j.Len(); got != 3 {
		t.Errorf("Len() = %d, want MaxKeys 3", got)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if want := map[string]int{JWKSSkipUnusable: 9, JWKSSkipOverLimit: 2}; !maps.Equal(ev.skipped, want) {
		t.Errorf("skipped %v, want %v", ev.skipped, want)
	}
	if ev.held != 3 {
		t.Errorf("reported %d keys held, want 3", ev.held)
	}
	for _, c := range []struct {
		alg, kid string
		want     int
	}{
		{AlgRS256, "r1", 1}, {AlgES256, "e1", 1}, {AlgRS256, "r2", 1}, {AlgES256, "e2", 0},
	} {
		ev.mu.Unlock()
		keys, _ := j.PublicKeys(c.alg, c.kid)
		ev.mu.Lock()
		if len(keys) != c.want {
			t.Errorf("PublicKeys(%s, %q) = %d keys, want %d", c.alg, c.kid, len(keys), c.want)
		}
	}
}

// A provider that never answers costs one Timeout, not a stuck session.
func TestJWKSTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	ev := &jwksEvents{}
	j := newJWKS(t, JWKSConfig{URL: hs.URL, Timeout: 50 * time.Millisecond, Observer: ev})
	if err := j.Refresh(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Refresh = %v, want a deadline error", err)
	}
	if got := ev.results(); len(got) < 1 || got[0] != JWKSFetchError {
		t.Errorf("fetch results %q, want %q first", got, JWKSFetchError)
	}
}

// Close cancels a fetch under way and returns; it may be called twice.
func TestJWKSClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	j, err := NewJWKS(JWKSConfig{URL: hs.URL, Timeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	j.Close()
	if keys, err := j.PublicKeys(AlgRS256, "x"); len(keys) != 0 || err == nil {
		t.Errorf("PublicKeys after Close = %d keys, %v; want an error", len(keys), err)
	}
}

func TestNewJWKSErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  JWKSConfig
		want string
	}{
		{"no URL", JWKSConfig{}, "URL"},
		{"relative URL", JWKSConfig{URL: "/jwks"}, "URL"},
		{"file URL", JWKSConfig{URL: "file:///etc/jwks.json"}, "URL"},
		{"refresh too short", JWKSConfig{URL: "http://127.0.0.1/", Refresh: 5 * time.Second}, "Refresh 5s is below the minimum 10s"},
		{"negative refresh", JWKSConfig{URL: "http://127.0.0.1/", Refresh: -time.Minute}, "Refresh -1m0s"},
		{"negative timeout", JWKSConfig{URL: "http://127.0.0.1/", Timeout: -time.Second}, "Timeout -1s is negative"},
		{"negative refetch", JWKSConfig{URL: "http://127.0.0.1/", RefetchInterval: -time.Second}, "RefetchInterval -1s is negative"},
		{"negative max keys", JWKSConfig{URL: "http://127.0.0.1/", MaxKeys: -1}, "MaxKeys -1 is negative"},
		{"negative max bytes", JWKSConfig{URL: "http://127.0.0.1/", MaxBytes: -1}, "MaxBytes -1 is negative"},
	}
	for _, tt := range tests {
		j, err := NewJWKS(tt.cfg)
		if err == nil {
			j.Close()
			t.Errorf("%s: NewJWKS = nil error, want one containing %q", tt.name, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "jwtauth: ") || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: error %q, want it to contain %q and match ErrInvalidConfig", tt.name, err, tt.want)
		}
	}
}
