package jwtauth

import (
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
)

// signWith returns claims as a JWT signed by key with method, naming kid
// in its header when kid is not empty.
func signWith(t testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing with %s: %v", method.Alg(), err)
	}
	return s
}

// staticKeys is a StaticKeys of the RSA and EC test keys.
func staticKeys(t *testing.T) *StaticKeys {
	t.Helper()
	testKeys(t)
	k, err := NewStaticKeys(&rsaKey.PublicKey, &ecKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPrincipalPublicKeys(t *testing.T) {
	testKeys(t)
	t.Parallel()
	keys := staticKeys(t)
	claims := validClaims("alice", nil)
	payload := `{"sub":"alice","exp":` + jwt.NewNumericDate(t0.Add(time.Hour)).String() + `}`
	rsaDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pkixPEM(t, &rsaKey.PublicKey)
	tests := []struct {
		name   string
		cfg    stageConfig
		token  string
		wantOK bool
	}{
		{"RS256", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodRS256, rsaKey, "", claims), true},
		{"ES256", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodES256, ecKey, "", claims), true},
		{"RS256 with a kid", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodRS256, rsaKey, "k1", claims), true},
		{"HS256 beside keys", stageConfig{Keys: keys, JWTSecret: testSecret}, sign(t, testSecret, claims), true},
		{"RS256 beside a secret", stageConfig{Keys: keys, JWTSecret: testSecret}, signWith(t, jwt.SigningMethodRS256, rsaKey, "", claims), true},

		{"RS256 by another key", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodRS256, rsaKey2, "", claims), false},
		{"ES256 by another key", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodES256, ecKey2, "", claims), false},
		{"RS256 without Keys", stageConfig{JWTSecret: testSecret}, signWith(t, jwt.SigningMethodRS256, rsaKey, "", claims), false},
		{"HS256 without a secret", stageConfig{Keys: keys}, sign(t, testSecret, claims), false},
		// The classic confusion: the public key, which is public, used as
		// the HMAC secret of a token that says HS256.
		{"HS256 over the RSA key's PEM", stageConfig{Keys: keys}, sign(t, []byte(rsaPEM), claims), false},
		{"HS256 over the RSA key's DER", stageConfig{Keys: keys}, sign(t, rsaDER, claims), false},
		{"HS256 over the PEM, secret also set", stageConfig{Keys: keys, JWTSecret: testSecret}, sign(t, []byte(rsaPEM), claims), false},
		{"RS256 header, HMAC over the PEM", stageConfig{Keys: keys}, craft(`{"alg":"RS256","typ":"JWT"}`, payload, []byte(rsaPEM)), false},
		{"ES256 header, RSA signature", stageConfig{Keys: keys}, relabel(t, signWith(t, jwt.SigningMethodRS256, rsaKey, "", claims), "ES256"), false},
		{"RS256 header, ECDSA signature", stageConfig{Keys: keys}, relabel(t, signWith(t, jwt.SigningMethodES256, ecKey, "", claims), "RS256"), false},
		{"ES384", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodES384, ecBad, "", claims), false},
		{"PS256", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodPS256, rsaKey, "", claims), false},
		{"none", stageConfig{Keys: keys}, craft(`{"alg":"none","typ":"JWT"}`, payload, nil), false},
		{"RS256 expired", stageConfig{Keys: keys}, signWith(t, jwt.SigningMethodRS256, rsaKey, "", jwt.MapClaims{"sub": "alice", "exp": t0.Add(-time.Second).Unix()}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, tt.cfg)
			s := &interceptor.Session{ID: "1"}
			r := p.Handle(s, frame("CONNECT", "passcode", tt.token), t0)
			if tt.wantOK {
				if r.Outcome != interceptor.Pass || s.Principal == nil || s.Principal.Name != "alice" {
					t.Fatalf("Handle(CONNECT) = %+v, Principal %+v; want pass as alice", r, s.Principal)
				}
				return
			}
			if r.Outcome != interceptor.Reject || r.Reason != outcome.RejectAuth {
				t.Errorf("Handle(CONNECT) = %+v, want a %q rejection", r, outcome.RejectAuth)
			}
			if s.Principal != nil {
				t.Errorf("Principal = %+v after a rejection, want nil", s.Principal)
			}
		})
	}
}

// relabel replaces the alg of a token's header, keeping its payload and
// signature.
func relabel(t *testing.T, token, alg string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	header := `{"alg":"` + alg + `","typ":"JWT"}`
	parts[0] = base64.RawURLEncoding.EncodeToString([]byte(header))
	return strings.Join(parts, ".")
}

func TestPrincipalNewRequiredWithKeys(t *testing.T) {
	t.Parallel()
	v, err := New(Config{Keys: staticKeys(t)})
	if err != nil {
		t.Fatalf("New with Keys only: %v", err)
	}
	if _, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{Required: true, Verifier: v}); err != nil {
		t.Errorf("Required with Keys only: %v", err)
	}
}

// TestPrincipalExpires: the session ends at exp plus Leeway, whichever
// algorithm signed the token; an anonymous one never.
func TestPrincipalExpires(t *testing.T) {
	testKeys(t)
	t.Parallel()
	exp := t0.Add(90 * time.Second)
	claims := jwt.MapClaims{"sub": "alice", "exp": exp.Unix()}
	tests := []struct {
		name  string
		cfg   stageConfig
		token string
		want  time.Time
	}{
		{"HS256", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, claims), exp},
		{"ES256", stageConfig{Keys: staticKeys(t)}, signWith(t, jwt.SigningMethodES256, ecKey, "", claims), exp},
		{"leeway", stageConfig{JWTSecret: testSecret, Leeway: 5 * time.Second}, sign(t, testSecret, claims), exp.Add(5 * time.Second)},
		{"anonymous", stageConfig{JWTSecret: testSecret}, "", time.Time{}},
	}
	for _, tt := range tests {
		p := newPrincipalStage(t, tt.cfg)
		s := &interceptor.Session{ID: "1"}
		f := frame("CONNECT")
		if tt.token != "" {
			f.Add("passcode", tt.token)
		}
		if r := p.Handle(s, f, t0); r.Outcome != interceptor.Pass {
			t.Fatalf("%s: Handle(CONNECT) = %+v, want pass", tt.name, r)
		}
		if !s.Principal.Expires.Equal(tt.want) {
			t.Errorf("%s: Expires = %v, want %v", tt.name, s.Principal.Expires, tt.want)
		}
	}
}

// TestPrincipalRefresh runs one session through a script of frames, each
// optionally carrying a token header, and checks the outcome and the
// principal after each step.
func TestPrincipalRefresh(t *testing.T) {
	testKeys(t)
	t.Parallel()
	hs := func(sub string, exp time.Duration, extra jwt.MapClaims) string {
		c := jwt.MapClaims{"sub": sub, "exp": t0.Add(exp).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return sign(t, testSecret, c)
	}
	rs := func(key any, sub string, exp time.Duration) string {
		return signWith(t, jwt.SigningMethodRS256, key, "", jwt.MapClaims{"sub": sub, "exp": t0.Add(exp).Unix()})
	}
	narrow := jwt.MapClaims{"stomp": map[string]any{"send": []string{"/topic/a"}}}
	type step struct {
		cmd     string
		dest    string
		token   string // "" sends no token header
		want    interceptor.Outcome
		expires time.Duration // wanted Expires - t0 after the step
		detail  string        // wanted in a rejection's detail
	}
	tests := []struct {
		name    string
		cfg     stageConfig
		connect string // "" connects anonymously
		steps   []step
	}{
		{"newer token moves the expiry", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "UNSUBSCRIBE", token: hs("alice", time.Hour, nil), want: interceptor.Pass, expires: time.Hour},
			{cmd: "SEND", dest: "/topic/b", want: interceptor.Pass, expires: time.Hour},
			{cmd: "ACK", token: hs("alice", 2*time.Hour, nil), want: interceptor.Pass, expires: 2 * time.Hour},
			{cmd: "SEND", dest: "/topic/b", token: hs("alice", 3*time.Hour, nil), want: interceptor.Pass, expires: 3 * time.Hour},
			{cmd: "SUBSCRIBE", dest: "/topic/b", token: hs("alice", 4*time.Hour, nil), want: interceptor.Pass, expires: 4 * time.Hour},
		}},
		{"the latest token wins, shorter too", stageConfig{JWTSecret: testSecret}, hs("alice", time.Hour, nil), []step{
			{cmd: "UNSUBSCRIBE", token: hs("alice", time.Minute, nil), want: interceptor.Pass, expires: time.Minute},
		}},
		{"new patterns apply from the refreshing frame on", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "SEND", dest: "/topic/b", want: interceptor.Pass, expires: time.Minute},
			{cmd: "SEND", dest: "/topic/b", token: hs("alice", time.Hour, narrow), want: interceptor.Reject, detail: `"/topic/b" is not allowed`},
		}},
		{"patterns widened", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, narrow), []step{
			{cmd: "SEND", dest: "/topic/b", token: hs("alice", time.Hour, nil), want: interceptor.Pass, expires: time.Hour},
		}},
		{"another principal", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "UNSUBSCRIBE", token: hs("bob", time.Hour, nil), want: interceptor.Reject, detail: `the token is for "bob", not for the session's principal "alice"`},
		}},
		{"bad signature", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "UNSUBSCRIBE", token: tamper(hs("alice", time.Hour, nil)), want: interceptor.Reject, detail: "signature is invalid"},
		}},
		{"expired", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "UNSUBSCRIBE", token: hs("alice", -time.Second, nil), want: interceptor.Reject, detail: "expired"},
		}},
		{"empty token header", stageConfig{JWTSecret: testSecret}, hs("alice", time.Minute, nil), []step{
			{cmd: "DISCONNECT", token: " ", want: interceptor.Reject, detail: "malformed"},
		}},
		{"anonymous session", stageConfig{JWTSecret: testSecret}, "", []step{
			{cmd: "UNSUBSCRIBE", token: hs("alice", time.Hour, nil), want: interceptor.Reject, detail: "authenticated with a token"},
		}},
		{"RS256 refresh", stageConfig{Keys: staticKeys(t)}, rs(rsaKey, "alice", time.Minute), []step{
			{cmd: "UNSUBSCRIBE", token: rs(rsaKey, "alice", time.Hour), want: interceptor.Pass, expires: time.Hour},
			{cmd: "UNSUBSCRIBE", token: rs(rsaKey2, "alice", 2*time.Hour), want: interceptor.Reject, detail: "verification error"},
		}},
		{"HS256 refresh of an RS256 session", stageConfig{Keys: staticKeys(t), JWTSecret: testSecret}, rs(rsaKey, "alice", time.Minute), []step{
			{cmd: "UNSUBSCRIBE", token: hs("alice", time.Hour, nil), want: interceptor.Pass, expires: time.Hour},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, tt.cfg)
			s := &interceptor.Session{ID: "1"}
			c := frame("CONNECT")
			if tt.connect != "" {
				c.Add("passcode", tt.connect)
			}
			if r := p.Handle(s, c, t0); r.Outcome != interceptor.Pass {
				t.Fatalf("CONNECT = %+v, want pass", r)
			}
			for i, st := range tt.steps {
				before := *s.Principal
				f := frame(st.cmd, "destination", st.dest, "id", "0")
				if st.token != "" {
					f.Add(interceptor.TokenHeader, st.token)
				}
				r := p.Handle(s, f, t0)
				if r.Outcome != st.want {
					t.Fatalf("step %d %s: Handle = %+v, want %v", i, st.cmd, r, st.want)
				}
				if r.Outcome == interceptor.Reject {
					if !strings.Contains(r.Detail, st.detail) {
						t.Errorf("step %d %s: Detail %q, want it to contain %q", i, st.cmd, r.Detail, st.detail)
					}
					continue
				}
				want := time.Time{}
				if !before.Anonymous {
					want = t0.Add(st.expires)
				}
				if !s.Principal.Expires.Equal(want) {
					t.Errorf("step %d %s: Expires = %v, want %v", i, st.cmd, s.Principal.Expires, want)
				}
				if s.Principal.Name != before.Name || s.Principal.Anonymous != before.Anonymous {
					t.Errorf("step %d %s: principal became %+v, was %+v", i, st.cmd, *s.Principal, before)
				}
			}
		})
	}
}

// A rejected refresh leaves the principal as it was, so nothing acts on a
// half-applied token before the session closes.
func TestPrincipalRefreshRejectedKeepsPrincipal(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, stageConfig{JWTSecret: testSecret})
	s := &interceptor.Session{ID: "1"}
	p.Handle(s, frame("CONNECT", "passcode", sign(t, testSecret, validClaims("alice", nil))), t0)
	before := s.Principal
	bob := sign(t, testSecret, jwt.MapClaims{"sub": "bob", "exp": t0.Add(2 * time.Hour).Unix()})
	if r := p.Handle(s, frame("UNSUBSCRIBE", "id", "x", interceptor.TokenHeader, bob), t0); r.Outcome != interceptor.Reject {
		t.Fatalf("refresh as bob = %+v, want a rejection", r)
	}
	if s.Principal != before {
		t.Errorf("Principal = %+v after a rejected refresh, want it unchanged (%+v)", s.Principal, before)
	}
}
