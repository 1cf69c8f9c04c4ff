package interceptor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/stompgate/stompgate/stompframe"
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

// newPrincipalStage builds a PrincipalStage whose clock reads t0.
func newPrincipalStage(t *testing.T, cfg PrincipalConfig) *PrincipalStage {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	p, err := NewPrincipalStage(cfg)
	if err != nil {
		t.Fatalf("NewPrincipalStage: %v", err)
	}
	return p
}

func TestPrincipalAnonymous(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  PrincipalConfig
		f    []string // CONNECT headers
	}{
		{"zero config", PrincipalConfig{}, nil},
		{"zero config ignores passcode", PrincipalConfig{}, []string{"login", "guest", "passcode", "guest"}},
		{"zero config ignores a token", PrincipalConfig{}, []string{"passcode", "eyJhbGciOiJub25lIn0.e30."}},
		{"secret, no token", PrincipalConfig{JWTSecret: testSecret}, []string{"login", "guest"}},
		{"secret, non-Bearer Authorization", PrincipalConfig{JWTSecret: testSecret}, []string{"Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, tt.cfg)
			for _, cmd := range []string{"CONNECT", "STOMP"} {
				s := &Session{ID: "42"}
				if r := p.Handle(s, frame(cmd, tt.f...), t0); r.Outcome != Pass {
					t.Fatalf("Handle(%s) = %+v, want pass", cmd, r)
				}
				if s.Principal == nil {
					t.Fatalf("Handle(%s) left Session.Principal nil", cmd)
				}
				if got, want := *s.Principal, (Principal{Name: "anonymous-42", Anonymous: true}); !principalEqual(got, want) {
					t.Errorf("Handle(%s): Principal = %+v, want %+v", cmd, got, want)
				}
			}
		})
	}
}

func principalEqual(a, b Principal) bool {
	return a.Name == b.Name && a.Anonymous == b.Anonymous &&
		(a.Subscribe == nil) == (b.Subscribe == nil) && slices.Equal(a.Subscribe, b.Subscribe) &&
		(a.Send == nil) == (b.Send == nil) && slices.Equal(a.Send, b.Send)
}

func TestPrincipalTokenSources(t *testing.T) {
	t.Parallel()
	alice := sign(t, testSecret, validClaims("alice", nil))
	bob := sign(t, testSecret, validClaims("bob", nil))
	tests := []struct {
		name    string
		headers []string
		query   url.Values
		want    string
	}{
		{"passcode", []string{"login", "x", "passcode", alice}, nil, "alice"},
		{"Authorization Bearer", []string{"Authorization", "Bearer " + alice}, nil, "alice"},
		{"Authorization Bearer with spaces", []string{"Authorization", "Bearer  " + alice + " "}, nil, "alice"},
		{"query access_token", nil, url.Values{"access_token": {alice}}, "alice"},
		{"passcode before Authorization", []string{"passcode", alice, "Authorization", "Bearer " + bob}, nil, "alice"},
		{"passcode before query", []string{"passcode", bob}, url.Values{"access_token": {alice}}, "bob"},
		{"Authorization before query", []string{"Authorization", "Bearer " + bob}, url.Values{"access_token": {alice}}, "bob"},
		{"Basic Authorization falls through to query", []string{"Authorization", "Basic abc"}, url.Values{"access_token": {bob}}, "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Required: true})
			s := &Session{ID: "1", Query: tt.query}
			if r := p.Handle(s, frame("CONNECT", tt.headers...), t0); r.Outcome != Pass {
				t.Fatalf("Handle(CONNECT) = %+v, want pass", r)
			}
			want := Principal{Name: tt.want}
			if s.Principal == nil || !principalEqual(*s.Principal, want) {
				t.Errorf("Principal = %+v, want %+v", s.Principal, want)
			}
		})
	}
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
		cfg   PrincipalConfig
		token string
	}{
		{"expired", PrincipalConfig{}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-time.Second).Unix()})},
		{"expired beyond leeway", PrincipalConfig{Leeway: 5 * time.Second}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-6 * time.Second).Unix()})},
		{"expires now", PrincipalConfig{}, sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Unix()})},
		{"not yet valid", PrincipalConfig{}, sign(t, testSecret, validClaims("alice", jwt.MapClaims{"nbf": t0.Add(time.Minute).Unix()}))},
		{"no exp", PrincipalConfig{}, sign(t, testSecret, jwt.MapClaims{"sub": "alice"})},
		{"no sub", PrincipalConfig{}, sign(t, testSecret, jwt.MapClaims{"exp": t0.Add(hour).Unix()})},
		{"empty sub", PrincipalConfig{}, sign(t, testSecret, validClaims("", nil))},
		{"wrong secret", PrincipalConfig{}, sign(t, other, validClaims("alice", nil))},
		{"alg none", PrincipalConfig{}, none},
		{"alg none, HMAC signature", PrincipalConfig{}, craft(`{"alg":"none","typ":"JWT"}`, payload, testSecret)},
		{"alg RS256, HMAC signature", PrincipalConfig{}, craft(`{"alg":"RS256","typ":"JWT"}`, payload, testSecret)},
		{"alg HS512", PrincipalConfig{}, craft(`{"alg":"HS512","typ":"JWT"}`, payload, testSecret)},
		{"tampered payload", PrincipalConfig{}, tamper(sign(t, testSecret, validClaims("alice", nil)))},
		{"garbage", PrincipalConfig{}, "not-a-token"},
		{"three dots", PrincipalConfig{}, "a.b.c"},
		{"bad stomp claim", PrincipalConfig{}, sign(t, testSecret, validClaims("alice", jwt.MapClaims{"stomp": "everything"}))},
	}
	for _, tt := range tests {
		for _, where := range []string{"passcode", "Authorization", "query"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				t.Parallel()
				cfg := tt.cfg
				cfg.JWTSecret = testSecret
				p := newPrincipalStage(t, cfg)
				s := &Session{ID: "1"}
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
				if r.Outcome != Reject || r.Reason != "auth" {
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
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Leeway: 5 * time.Second})
	tok := sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(-4 * time.Second).Unix()})
	s := &Session{}
	if r := p.Handle(s, frame("CONNECT", "passcode", tok), t0); r.Outcome != Pass {
		t.Errorf("token expired 4s ago with Leeway 5s: Handle = %+v, want pass", r)
	}
}

// TestPrincipalClock checks that the stage reads Config.Now, not the
// frame's time, to check exp.
func TestPrincipalClock(t *testing.T) {
	t.Parallel()
	now := t0
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Now: func() time.Time { return now }})
	tok := sign(t, testSecret, jwt.MapClaims{"sub": "alice", "exp": t0.Add(time.Minute).Unix()})
	if r := p.Handle(&Session{}, frame("CONNECT", "passcode", tok), t0); r.Outcome != Pass {
		t.Fatalf("valid token: Handle = %+v, want pass", r)
	}
	now = t0.Add(2 * time.Minute)
	if r := p.Handle(&Session{}, frame("CONNECT", "passcode", tok), t0); r.Outcome != Reject {
		t.Errorf("token expired by Now: Handle = %+v, want reject", r)
	}
}

func TestPrincipalRequired(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Required: true})
	for _, hs := range [][]string{nil, {"login", "guest", "passcode", ""}, {"Authorization", "Basic abc"}} {
		s := &Session{ID: "1", Query: url.Values{"other": {"x"}}}
		r := p.Handle(s, frame("CONNECT", hs...), t0)
		if r.Outcome != Reject || r.Reason != RejectAuth {
			t.Errorf("CONNECT %v without a token: Handle = %+v, want a Reject with reason %q", hs, r, RejectAuth)
		}
		if s.Principal != nil {
			t.Errorf("Principal = %+v after a Reject, want nil", s.Principal)
		}
	}
}

func TestNewPrincipalStageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  PrincipalConfig
		want []string
	}{
		{"Required without secret", PrincipalConfig{Required: true}, []string{"Required", "JWTSecret"}},
		{"negative Leeway", PrincipalConfig{JWTSecret: testSecret, Leeway: -time.Second}, []string{"Leeway", "-1s"}},
	}
	for _, tt := range tests {
		p, err := NewPrincipalStage(tt.cfg)
		if err == nil {
			t.Errorf("%s: NewPrincipalStage = %v, nil; want an error", tt.name, p)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tt.name, err, w)
			}
		}
	}
}

func TestPrincipalBeforeConnect(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{})
	for _, f := range []*stompframe.Frame{
		frame("SEND", "destination", "/topic/a"),
		frame("SUBSCRIBE", "id", "0", "destination", "/topic/a"),
		frame("UNSUBSCRIBE", "id", "0"),
		frame("ACK", "id", "1"),
		frame("BEGIN", "transaction", "t"),
		frame("DISCONNECT"),
	} {
		r := p.Handle(&Session{}, f, t0)
		if r.Outcome != Reject || r.Reason != RejectAuth {
			t.Errorf("%s before CONNECT: Handle = %+v, want a Reject with reason %q", f.Command, r, RejectAuth)
		}
	}
}

func TestPrincipalPermissions(t *testing.T) {
	t.Parallel()
	type step struct {
		cmd, dest string
		want      Outcome
	}
	tests := []struct {
		name  string
		stomp any // the "stomp" claim; nil leaves it out
		steps []step
	}{
		{"no stomp claim: anything", nil, []step{
			{"SUBSCRIBE", "/topic/anything", Pass},
			{"SEND", "/queue/x.y", Pass},
		}},
		{"patterns", map[string]any{"subscribe": []string{"/topic/room.*"}, "send": []string{"/topic/room.42"}}, []step{
			{"SUBSCRIBE", "/topic/room.7", Pass},
			{"SUBSCRIBE", "/topic/room.42", Pass},
			{"SUBSCRIBE", "/topic/room.7.private", Reject},
			{"SUBSCRIBE", "/topic/lobby", Reject},
			{"SUBSCRIBE", "", Reject},
			{"SEND", "/topic/room.42", Pass},
			{"SEND", "/topic/room.43", Reject},
			{"SEND", "/topic/room.420", Reject},
			{"UNSUBSCRIBE", "/topic/lobby", Pass},
			{"ACK", "", Pass},
		}},
		{"subscribe list absent: any", map[string]any{"send": []string{"/topic/chat"}}, []step{
			{"SUBSCRIBE", "/topic/anything.at.all", Pass},
			{"SEND", "/topic/chat", Pass},
			{"SEND", "/topic/other", Reject},
		}},
		{"send list empty: none", map[string]any{"send": []string{}}, []step{
			{"SUBSCRIBE", "/topic/a", Pass},
			{"SEND", "/topic/a", Reject},
			{"SEND", "", Reject},
		}},
		{"both empty: none", map[string]any{"send": []string{}, "subscribe": []string{}}, []step{
			{"SUBSCRIBE", "/topic/a", Reject},
			{"SEND", "/topic/a", Reject},
			{"DISCONNECT", "", Pass},
		}},
		{"null lists: any", map[string]any{"send": nil, "subscribe": nil}, []step{
			{"SUBSCRIBE", "/topic/a", Pass},
			{"SEND", "/topic/a", Pass},
		}},
		{"several patterns", map[string]any{"send": []string{"/topic/a", "/queue/**"}}, []step{
			{"SEND", "/topic/a", Pass},
			{"SEND", "/queue/x/y.z", Pass},
			{"SEND", "/topic/b", Reject},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret})
			extra := jwt.MapClaims{}
			if tt.stomp != nil {
				extra["stomp"] = tt.stomp
			}
			s := &Session{ID: "1"}
			if r := p.Handle(s, frame("CONNECT", "passcode", sign(t, testSecret, validClaims("alice", extra))), t0); r.Outcome != Pass {
				t.Fatalf("CONNECT = %+v, want pass", r)
			}
			for _, st := range tt.steps {
				r := p.Handle(s, frame(st.cmd, "destination", st.dest), t0)
				if r.Outcome != st.want {
					t.Errorf("%s %q: outcome %v, want %v (%+v)", st.cmd, st.dest, r.Outcome, st.want, r)
					continue
				}
				if r.Outcome == Reject {
					if r.Reason != "permission" || r.Message == "" {
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

// TestPrincipalAnonymousMayUseAnything checks that an anonymous principal
// has no destination restrictions.
func TestPrincipalAnonymousMayUseAnything(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{})
	s := &Session{ID: "1"}
	p.Handle(s, frame("CONNECT"), t0)
	for _, f := range []*stompframe.Frame{
		frame("SUBSCRIBE", "id", "0", "destination", "/topic/x"),
		frame("SEND", "destination", "/queue/y"),
		frame("ACK", "id", "0"),
	} {
		if r := p.Handle(s, f, t0); r.Outcome != Pass {
			t.Errorf("anonymous %s: Handle = %+v, want pass", f.Command, r)
		}
	}
}

// TestPrincipalClaimsCopied checks the principal built from a token's
// claims.
func TestPrincipalClaims(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret})
	claims := validClaims("alice", jwt.MapClaims{"stomp": map[string]any{"send": []string{"/a"}, "subscribe": []string{"/b", "/c"}}})
	s := &Session{}
	p.Handle(s, frame("CONNECT", "passcode", sign(t, testSecret, claims)), t0)
	want := Principal{Name: "alice", Send: []string{"/a"}, Subscribe: []string{"/b", "/c"}}
	if s.Principal == nil || !principalEqual(*s.Principal, want) {
		t.Errorf("Principal = %+v, want %+v", s.Principal, want)
	}
}

// fakeBans is a BanChecker (and a Banner) over a map of keys to the time
// each ban has left; it records every key it is asked about.
type fakeBans struct {
	mu     sync.Mutex
	left   map[string]time.Duration
	err    error
	asked  []string
	badCtx bool // some check had no deadline, or one beyond BanCheckTimeout
}

func (b *fakeBans) Banned(ctx context.Context, key string) (time.Duration, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > BanCheckTimeout {
		b.badCtx = true
	}
	b.asked = append(b.asked, key)
	if b.err != nil {
		return 0, false, b.err
	}
	d, ok := b.left[key]
	return d, ok, nil
}

func (b *fakeBans) Ban(_ context.Context, key string, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == nil {
		b.left = make(map[string]time.Duration)
	}
	b.left[key] = d
	return nil
}

func (b *fakeBans) keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.asked)
}

func TestPrincipalBanned(t *testing.T) {
	t.Parallel()
	mallory := sign(t, testSecret, validClaims("mallory", nil))
	alice := sign(t, testSecret, validClaims("alice", nil))
	left := map[string]time.Duration{
		"principal:mallory": time.Minute,
		"principal:carol":   1500 * time.Millisecond,
		"principal:dave":    time.Millisecond,
		"mallory":           time.Minute, // an IP-style key: not the principal's
	}
	tests := []struct {
		name      string
		token     string // empty: anonymous CONNECT
		err       error
		wantAsked []string
		wantOK    bool
		detail    string
	}{
		{name: "banned", token: mallory, wantAsked: []string{"principal:mallory"}, detail: "this principal is banned for another 60 s"},
		{name: "rounded up", token: sign(t, testSecret, validClaims("carol", nil)), wantAsked: []string{"principal:carol"}, detail: "this principal is banned for another 2 s"},
		{name: "last ms", token: sign(t, testSecret, validClaims("dave", nil)), wantAsked: []string{"principal:dave"}, detail: "this principal is banned for another 1 s"},
		{name: "not banned", token: alice, wantAsked: []string{"principal:alice"}, wantOK: true},
		{name: "check fails open", token: mallory, err: errors.New("store down"), wantAsked: []string{"principal:mallory"}, wantOK: true},
		{name: "anonymous not checked", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bans := &fakeBans{left: left, err: tt.err}
			p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Bans: bans})
			s := &Session{ID: "7"}
			var headers []string
			if tt.token != "" {
				headers = []string{"passcode", tt.token}
			}
			r := p.Handle(s, frame("CONNECT", headers...), t0)
			if got := bans.keys(); !slices.Equal(got, tt.wantAsked) {
				t.Errorf("keys checked = %q, want %q", got, tt.wantAsked)
			}
			if bans.badCtx {
				t.Errorf("a check ran without a deadline within BanCheckTimeout %v", BanCheckTimeout)
			}
			if tt.wantOK {
				if r.Outcome != Pass || s.Principal == nil {
					t.Errorf("Handle(CONNECT) = %+v, Principal %+v; want pass with a principal", r, s.Principal)
				}
				return
			}
			want := Result{Outcome: Reject, Reason: RejectBanned, Message: "banned", Detail: tt.detail}
			if r != want {
				t.Errorf("Handle(CONNECT) = %+v, want %+v", r, want)
			}
			if s.Principal != nil {
				t.Errorf("Principal = %+v after a rejected CONNECT, want nil", s.Principal)
			}
		})
	}
}

// A token that fails authentication is rejected as such, before any ban
// check.
func TestPrincipalBanCheckAfterAuth(t *testing.T) {
	t.Parallel()
	bans := &fakeBans{left: map[string]time.Duration{"principal:mallory": time.Minute}}
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Bans: bans})
	expired := sign(t, testSecret, jwt.MapClaims{"sub": "mallory", "exp": t0.Add(-time.Hour).Unix()})
	r := p.Handle(&Session{}, frame("CONNECT", "passcode", expired), t0)
	if r.Outcome != Reject || r.Reason != RejectAuth {
		t.Errorf("expired token of a banned principal: Handle = %+v, want a %q rejection", r, RejectAuth)
	}
	if got := bans.keys(); len(got) != 0 {
		t.Errorf("keys checked = %q, want none", got)
	}
}

// The key the LimitStage bans at escalation is the key the PrincipalStage
// checks at CONNECT.
func TestPrincipalBanFromEscalation(t *testing.T) {
	t.Parallel()
	bans := &fakeBans{}
	st := newLimitStage(t, LimitConfig{Limit: limitOneForever, EscalateAfter: 1, BanFor: time.Minute, Banner: bans})
	p := newPrincipalStage(t, PrincipalConfig{JWTSecret: testSecret, Bans: bans})
	connect := frame("CONNECT", "passcode", sign(t, testSecret, validClaims("mallory", nil)))

	s := &Session{ID: "1"}
	if r := p.Handle(s, connect, t0); r.Outcome != Pass {
		t.Fatalf("first CONNECT: Handle = %+v, want pass", r)
	}
	send := frame("SEND", "destination", "/topic/x")
	st.Handle(s, send, t0)
	if r := st.Handle(s, send, t0); r.Outcome != Reject || r.Reason != RejectAbuse {
		t.Fatalf("second SEND: Handle = %+v, want a %q rejection", r, RejectAbuse)
	}
	r := p.Handle(&Session{ID: "2"}, connect, t0)
	if r.Outcome != Reject || r.Reason != RejectBanned {
		t.Errorf("CONNECT after escalation: Handle = %+v, want a %q rejection", r, RejectBanned)
	}
}
