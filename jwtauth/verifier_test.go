package jwtauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/interceptor"
)

var testSecret = []byte("a shared secret of at least 32 bytes!")

// sign returns claims as an HS256 JWT signed with secret.
func sign(t *testing.T, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		t.Fatalf("signing %v: %v", claims, err)
	}
	return tok
}

// validClaims returns claims for sub that are valid at t0, plus extra.
func validClaims(sub string, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{"sub": sub, "exp": t0.Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// craft builds a token with any header, signed with HMAC-SHA256 over
// secret whatever the header claims.
func craft(header, payload string, secret []byte) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// stageConfig sets up a PrincipalStage checking tokens with a Verifier:
// JWTSecret, Keys and Leeway are the Verifier's Config (with neither
// JWTSecret nor Keys the stage has no Verifier), the rest the stage's.
type stageConfig struct {
	JWTSecret []byte
	Keys      KeySource
	Leeway    time.Duration
	Required  bool
	Now       func() time.Time
}

// newPrincipalStage builds the PrincipalStage of cfg, its clock reading t0
// unless cfg.Now is set.
func newPrincipalStage(t testing.TB, cfg stageConfig) *interceptor.PrincipalStage {
	t.Helper()
	pc := interceptor.PrincipalConfig{Required: cfg.Required, Now: cfg.Now}
	if pc.Now == nil {
		pc.Now = func() time.Time { return t0 }
	}
	if len(cfg.JWTSecret) > 0 || cfg.Keys != nil {
		v, err := New(Config{Secret: cfg.JWTSecret, Keys: cfg.Keys, Leeway: cfg.Leeway})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		pc.Verifier = v
	}
	p, err := interceptor.NewPrincipalStage(pc)
	if err != nil {
		t.Fatalf("NewPrincipalStage: %v", err)
	}
	return p
}

func TestPrincipalRejectsBadTokens(t *testing.T) {
	t.Parallel()
	hour := time.Hour
	other := []byte("another secret, also 32 bytes long!!")
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims("alice", nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"sub":"alice","exp":` + strconv.FormatInt(t0.Add(hour).Unix(), 10) + `}`
	tests := []struct {
		name  string
		cfg   stageConfig
		token string
	}{
		{"expired", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-time.Second).Unix()})},
		{"expired beyond leeway", stageConfig{Leeway: 5 * time.Second}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-6 * time.Second).Unix()})},
		{"expires now", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Unix()})},
		{"not yet valid", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, validClaims("alice", jwt.MapClaims{"nbf": t0.Add(time.Minute).Unix()}))},
		{"no exp", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, jwt.MapClaims{"sub": "alice"})},
		{"no sub", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, jwt.MapClaims{"exp": t0.Add(hour).Unix()})},
		{"empty sub", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, validClaims("", nil))},
		{"wrong secret", stageConfig{JWTSecret: testSecret}, sign(t, other, validClaims("alice", nil))},
		{"alg none", stageConfig{JWTSecret: testSecret}, none},
		{"alg none, HMAC signature", stageConfig{JWTSecret: testSecret}, craft(`{"alg":"none","typ":"JWT"}`, payload, testSecret)},
		{"alg RS256, HMAC signature", stageConfig{JWTSecret: testSecret}, craft(`{"alg":"RS256","typ":"JWT"}`, payload, testSecret)},
		{"alg HS512", stageConfig{JWTSecret: testSecret}, craft(`{"alg":"HS512","typ":"JWT"}`, payload, testSecret)},
		{"tampered payload", stageConfig{JWTSecret: testSecret}, tamper(sign(t, testSecret, validClaims("alice", nil)))},
		{"garbage", stageConfig{JWTSecret: testSecret}, "not-a-token"},
		{"three dots", stageConfig{JWTSecret: testSecret}, "a.b.c"},
		{"bad stomp claim", stageConfig{JWTSecret: testSecret}, sign(t, testSecret, validClaims("alice", jwt.MapClaims{"stomp": "everything"}))},
	}
	for _, tt := range tests {
		for _, where := range []string{"passcode", "Authorization", "query"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				t.Parallel()
				cfg := tt.cfg
				cfg.JWTSecret = testSecret
				p := newPrincipalStage(t, cfg)
				s := &interceptor.Session{ID: "1"}
				f := frame("CONNECT")
				switch where {
				case "passcode":
					f.Add("passcode", tt.token)
				case "Authorization":
					f.Add("Authorization", "Bearer "+tt.token)
				default:
					s.Query = url.Values{"access_token": {tt.token}}
				}
				r := p.Handle(s, f, t0)
				if r.Outcome != interceptor.Reject || r.Reason.String() != "auth" {
					t.Errorf("Handle(CONNECT) = %+v, want a Reject with reason %q", r, "auth")
				}
				if r.Message == "" {
					t.Error("Reject has no Message")
				}
				if s.Principal != nil {
					t.Errorf("Principal = %+v after a Reject, want nil", s.Principal)
				}
			})
		}
	}
}

// tamper changes the token's payload without re-signing it.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), "alice", "admin", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

func TestPrincipalLeeway(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, stageConfig{JWTSecret: testSecret, Leeway: 5 * time.Second})
	tok := sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-4 * time.Second).Unix()})
	s := &interceptor.Session{}
	if r := p.Handle(s, frame("CONNECT", "passcode", tok), t0); r.Outcome != interceptor.Pass {
		t.Errorf("token expired 4s ago with Leeway 5s: Handle = %+v, want pass", r)
	}
}

// TestPrincipalClock checks that exp is checked at the stage's clock
// (stageConfig.Now, which the stage gives Verify), not at the frame's
// time.
func TestPrincipalClock(t *testing.T) {
	t.Parallel()
	now := t0
	p := newPrincipalStage(t, stageConfig{JWTSecret: testSecret, Now: func() time.Time { return now }})
	tok := sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(time.Minute).Unix()})
	if r := p.Handle(&interceptor.Session{}, frame("CONNECT", "passcode", tok), t0); r.Outcome != interceptor.Pass {
		t.Fatalf("valid token: Handle = %+v, want pass", r)
	}
	now = t0.Add(2 * time.Minute)
	if r := p.Handle(&interceptor.Session{}, frame("CONNECT", "passcode", tok), t0); r.Outcome != interceptor.Reject {
		t.Errorf("token expired by Now: Handle = %+v, want reject", r)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"neither secret nor keys", Config{}, []string{"jwtauth: ", "Secret", "Keys"}},
		{"negative Leeway", Config{Secret: testSecret, Leeway: -time.Second}, []string{"jwtauth: ", "Leeway", "-1s"}},
		{"secret under 32 bytes", Config{Secret: []byte("31 bytes, one short of the min.")}, []string{"jwtauth: ", "Secret", "31 bytes", "32"}},
	}
	for _, tt := range tests {
		v, err := New(tt.cfg)
		if err == nil {
			t.Errorf("%s: New = %v, nil; want an error", tt.name, v)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tt.name, err, w)
			}
		}
	}
}

func TestPrincipalPermissions(t *testing.T) {
	t.Parallel()
	type step struct {
		cmd, dest string
		want      interceptor.Outcome
	}
	tests := []struct {
		name  string
		stomp any // the "stomp" claim; nil leaves it out
		steps []step
	}{
		{"no stomp claim: anything", nil, []step{
			{"SUBSCRIBE", "/topic/anything", interceptor.Pass},
			{"SEND", "/queue/x.y", interceptor.Pass},
		}},
		{"patterns", map[string]any{"subscribe": []string{"/topic/room.*"}, "send": []string{"/topic/room.42"}}, []step{
			{"SUBSCRIBE", "/topic/room.7", interceptor.Pass},
			{"SUBSCRIBE", "/topic/room.42", interceptor.Pass},
			{"SUBSCRIBE", "/topic/room.7.private", interceptor.Reject},
			{"SUBSCRIBE", "/topic/lobby", interceptor.Reject},
			{"SUBSCRIBE", "", interceptor.Reject},
			{"SEND", "/topic/room.42", interceptor.Pass},
			{"SEND", "/topic/room.43", interceptor.Reject},
			{"SEND", "/topic/room.420", interceptor.Reject},
			{"UNSUBSCRIBE", "/topic/lobby", interceptor.Pass},
			{"ACK", "", interceptor.Pass},
		}},
		{"subscribe list absent: any", map[string]any{"send": []string{"/topic/chat"}}, []step{
			{"SUBSCRIBE", "/topic/anything.at.all", interceptor.Pass},
			{"SEND", "/topic/chat", interceptor.Pass},
			{"SEND", "/topic/other", interceptor.Reject},
		}},
		{"send list empty: none", map[string]any{"send": []string{}}, []step{
			{"SUBSCRIBE", "/topic/a", interceptor.Pass},
			{"SEND", "/topic/a", interceptor.Reject},
			{"SEND", "", interceptor.Reject},
		}},
		{"both empty: none", map[string]any{"send": []string{}, "subscribe": []string{}}, []step{
			{"SUBSCRIBE", "/topic/a", interceptor.Reject},
			{"SEND", "/topic/a", interceptor.Reject},
			{"DISCONNECT", "", interceptor.Pass},
		}},
		{"null lists: any", map[string]any{"send": nil, "subscribe": nil}, []step{
			{"SUBSCRIBE", "/topic/a", interceptor.Pass},
			{"SEND", "/topic/a", interceptor.Pass},
		}},
		{"several patterns", map[string]any{"send": []string{"/topic/a", "/queue/**"}}, []step{
			{"SEND", "/topic/a", interceptor.Pass},
			{"SEND", "/queue/x/y.z", interceptor.Pass},
			{"SEND", "/topic/b", interceptor.Reject},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, stageConfig{JWTSecret: testSecret})
			extra := jwt.MapClaims{}
			if tt.stomp != nil {
				extra["stomp"] = tt.stomp
			}
			s := &interceptor.Session{ID: "1"}
			if r := p.Handle(s, frame("CONNECT", "passcode", sign(t, testSecret, validClaims("alice", extra))), t0); r.Outcome != interceptor.Pass {
				t.Fatalf("CONNECT = %+v, want pass", r)
			}
			for _, st := range tt.steps {
				r := p.Handle(s, frame(st.cmd, "destination", st.dest), t0)
				if r.Outcome != st.want {
					t.Errorf("%s %q: outcome %v, want %v (%+v)", st.cmd, st.dest, r.Outcome, st.want, r)
					continue
				}
				if r.Outcome == interceptor.Reject {
					if r.Reason.String() != "permission" || r.Message == "" {
						t.Errorf("%s %q: Reject %+v, want reason %q and a message", st.cmd, st.dest, r, "permission")
					}
					if !strings.Contains(r.Detail, "alice") || !strings.Contains(r.Detail, st.cmd) {
						t.Errorf("%s %q: Detail %q does not name the command and principal", st.cmd, st.dest, r.Detail)
					}
				}
			}
		})
	}
}

func principalEqual(a, b interceptor.Principal) bool {
	return a.Name == b.Name && a.Anonymous == b.Anonymous &&
		(a.Subscribe == nil) == (b.Subscribe == nil) && slices.Equal(a.Subscribe, b.Subscribe) &&
		(a.Send == nil) == (b.Send == nil) && slices.Equal(a.Send, b.Send)
}

// TestPrincipalClaims checks the principal built from a token's claims.
func TestPrincipalClaims(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, stageConfig{JWTSecret: testSecret})
	claims := validClaims("alice", jwt.MapClaims{"stomp": map[string]any{"send": []string{"/a"}, "subscribe": []string{"/b", "/c"}}})
	s := &interceptor.Session{}
	p.Handle(s, frame("CONNECT", "passcode", sign(t, testSecret, claims)), t0)
	want := interceptor.Principal{Name: "alice", Send: []string{"/a"}, Subscribe: []string{"/b", "/c"}}
	if s.Principal == nil || !principalEqual(*s.Principal, want) {
		t.Errorf("Principal = %+v, want %+v", s.Principal, want)
	}
}

// TestVerify checks Verify on its own: the principal of a valid token, and
// the text of a refusal, which a client reads in the ERROR frame's body.
func TestVerify(t *testing.T) {
	t.Parallel()
	v, err := New(Config{Secret: testSecret, Leeway: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(time.Hour)
	p, err := v.Verify(sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": exp.Unix(),
		"stomp": map[string]any{"send": []string{}}}), t0)
	if err != nil {
		t.Fatalf("Verify(valid) error = %v", err)
	}
	want := interceptor.Principal{Name: "alice", Send: []string{}, Expires: exp.Add(time.Second)}
	if !principalEqual(*p, want) || !p.Expires.Equal(want.Expires) {
		t.Errorf("Verify(valid) = %+v, want %+v", *p, want)
	}

	for _, tt := range []struct {
		name, token, want string
	}{
		{"expired", sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-2 * time.Second).Unix()}), "token has invalid claims: token is expired"},
		{"no exp", sign(t, testSecret, jwt.MapClaims{"sub": "alice"}), "token has invalid claims: token is missing required claim: exp claim is required"},
		{"no sub", sign(t, testSecret, jwt.MapClaims{"exp": exp.Unix()}), `token has no "sub" claim`},
		{"bad signature", tamper(sign(t, testSecret, validClaims("alice", nil))), "token signature is invalid: signature is invalid"},
	} {
		p, err := v.Verify(tt.token, t0)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Verify = %+v, %v; want error %q", tt.name, p, err, tt.want)
		}
	}
	// The claims are checked at the instant given, not at the wall clock.
	tok := sign(t, testSecret, validClaims("alice", nil))
	if _, err := v.Verify(tok, t0.Add(2*time.Hour)); !errors.Is(err, jwt.ErrTokenExpired) {
		t.Errorf("Verify at t0+2h error = %v, want ErrTokenExpired", err)
	}
}
