package interceptor

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// fakeVerifier is a TokenVerifier that accepts the tokens it maps to a
// principal until that principal's Expires, and records the instant it is
// asked at each time. Any other token is refused as a bad signature.
type fakeVerifier struct {
	tokens map[string]Principal

	mu    sync.Mutex
	asked []time.Time
}

func (v *fakeVerifier) Verify(token string, now time.Time) (*Principal, error) {
	v.mu.Lock()
	v.asked = append(v.asked, now)
	v.mu.Unlock()
	p, ok := v.tokens[token]
	if !ok {
		return nil, errors.New("token signature is invalid")
	}
	if !p.Expires.IsZero() && !now.Before(p.Expires) {
		return nil, errors.New("token is expired")
	}
	return &p, nil
}

func (v *fakeVerifier) instants() []time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.asked)
}

// The tokens of testVerifier, each valid for an hour after t0.
const (
	aliceToken   = "token-of-alice"
	bobToken     = "token-of-bob"
	malloryToken = "token-of-mallory"
)

// testVerifier accepts aliceToken, bobToken and malloryToken (and the
// tokens of extra) until t0 plus an hour.
func testVerifier(extra map[string]Principal) *fakeVerifier {
	hour := t0.Add(time.Hour)
	v := &fakeVerifier{tokens: map[string]Principal{
		aliceToken:   {Name: "alice", Expires: hour},
		bobToken:     {Name: "bob", Expires: hour},
		malloryToken: {Name: "mallory", Expires: hour},
	}}
	for k, p := range extra {
		v.tokens[k] = p
	}
	return v
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
		{"zero config ignores a token", PrincipalConfig{}, []string{"passcode", aliceToken}},
		{"verifier, no token", PrincipalConfig{Verifier: testVerifier(nil)}, []string{"login", "guest"}},
		{"verifier, non-Bearer Authorization", PrincipalConfig{Verifier: testVerifier(nil)}, []string{"Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q="}},
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
		(a.Send == nil) == (b.Send == nil) && slices.Equal(a.Send, b.Send) &&
		a.Expires.Equal(b.Expires)
}

func TestPrincipalTokenSources(t *testing.T) {
	t.Parallel()
	alice, bob := aliceToken, bobToken
	tests := []struct {
		name    string
		headers []string
		query   url.Values
		want    string
	}{
		{"passcode", []string{"login", "x", "passcode", alice}, nil, "alice"},
		{"Authorization Bearer", []string{"Authorization", "Bearer " + alice}, nil, "alice"},
		{"Authorization bearer, any case", []string{"Authorization", "bEaReR " + alice}, nil, "alice"},
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
			p := newPrincipalStage(t, PrincipalConfig{Verifier: testVerifier(nil), Required: true})
			s := &Session{ID: "1", Query: tt.query}
			if r := p.Handle(s, frame("CONNECT", tt.headers...), t0); r.Outcome != Pass {
				t.Fatalf("Handle(CONNECT) = %+v, want pass", r)
			}
			want := Principal{Name: tt.want, Expires: t0.Add(time.Hour)}
			if s.Principal == nil || !principalEqual(*s.Principal, want) {
				t.Errorf("Principal = %+v, want %+v", s.Principal, want)
			}
		})
	}
}

// namelessVerifier answers every token with the principal it holds.
type namelessVerifier struct{ p *Principal }

func (v namelessVerifier) Verify(string, time.Time) (*Principal, error) { return v.p, nil }

// TestPrincipalRejectsBadTokens: whatever the verifier refuses is refused
// as "invalid credentials" with the verifier's reason as the detail,
// wherever the token came from; so is a principal without a name.
func TestPrincipalRejectsBadTokens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		verifier   TokenVerifier
		token      string
		wantDetail string
	}{
		{"unknown", testVerifier(nil), "not-a-token", "token signature is invalid"},
		{"expired", testVerifier(map[string]Principal{"old": {Name: "alice", Expires: t0.Add(-time.Second)}}), "old", "token is expired"},
		{"expires now", testVerifier(map[string]Principal{"now": {Name: "alice", Expires: t0}}), "now", "token is expired"},
		{"no name", namelessVerifier{&Principal{}}, aliceToken, "the token names no principal"},
		{"no principal", namelessVerifier{}, aliceToken, "the token names no principal"},
	}
	for _, tt := range tests {
		for _, where := range []string{"passcode", "Authorization", "query"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				t.Parallel()
				p := newPrincipalStage(t, PrincipalConfig{Verifier: tt.verifier})
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
				want := Result{Outcome: Reject, Reason: outcome.RejectAuth, Message: "invalid credentials", Detail: tt.wantDetail}
				if r != want {
					t.Errorf("Handle(CONNECT) = %+v, want %+v", r, want)
				}
				if s.Principal != nil {
					t.Errorf("Principal = %+v after a Reject, want nil", s.Principal)
				}
			})
		}
	}
}

// TestPrincipalClock checks that the stage gives the verifier the time of
// Config.Now, not the frame's time.
func TestPrincipalClock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := t0
	v := testVerifier(nil)
	p := newPrincipalStage(t, PrincipalConfig{Verifier: v, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}})
	if r := p.Handle(&Session{}, frame("CONNECT", "passcode", aliceToken), t0); r.Outcome != Pass {
		t.Fatalf("valid token: Handle = %+v, want pass", r)
	}
	mu.Lock()
	now = t0.Add(2 * time.Hour)
	mu.Unlock()
	if r := p.Handle(&Session{}, frame("CONNECT", "passcode", aliceToken), t0); r.Outcome != Reject {
		t.Errorf("token expired by Now: Handle = %+v, want reject", r)
	}
	if got, want := v.instants(), []time.Time{t0, t0.Add(2 * time.Hour)}; !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("Verify asked at %v, want %v", got, want)
	}
}

func TestPrincipalRequired(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{Verifier: testVerifier(nil), Required: true})
	for _, hs := range [][]string{nil, {"login", "guest", "passcode", ""}, {"Authorization", "Basic abc"}} {
		s := &Session{ID: "1", Query: url.Values{"other": {"x"}}}
		r := p.Handle(s, frame("CONNECT", hs...), t0)
		if r.Outcome != Reject || r.Reason != outcome.RejectAuth {
			t.Errorf("CONNECT %v without a token: Handle = %+v, want a Reject with reason %q", hs, r, outcome.RejectAuth)
		}
		if s.Principal != nil {
			t.Errorf("Principal = %+v after a Reject, want nil", s.Principal)
		}
	}
}

func TestNewPrincipalStageErrors(t *testing.T) {
	t.Parallel()
	p, err := NewPrincipalStage(PrincipalConfig{Required: true})
	if err == nil {
		t.Fatalf("Required without a Verifier: NewPrincipalStage = %v, nil; want an error", p)
	}
	for _, w := range []string{"interceptor: ", "Required", "Verifier"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
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
		if r.Outcome != Reject || r.Reason != outcome.RejectAuth {
			t.Errorf("%s before CONNECT: Handle = %+v, want a Reject with reason %q", f.Command, r, outcome.RejectAuth)
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
		name            string
		subscribe, send []string
		steps           []step
	}{
		{"nil lists: anything", nil, nil, []step{
			{"SUBSCRIBE", "/topic/anything", Pass},
			{"SEND", "/queue/x.y", Pass},
		}},
		{"patterns", []string{"/topic/room.*"}, []string{"/topic/room.42"}, []step{
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
		{"send list empty: none", nil, []string{}, []step{
			{"SUBSCRIBE", "/topic/a", Pass},
			{"SEND", "/topic/a", Reject},
			{"SEND", "", Reject},
		}},
		{"both empty: none", []string{}, []string{}, []step{
			{"SUBSCRIBE", "/topic/a", Reject},
			{"SEND", "/topic/a", Reject},
			{"DISCONNECT", "", Pass},
		}},
		{"several patterns", nil, []string{"/topic/a", "/queue/**"}, []step{
			{"SEND", "/topic/a", Pass},
			{"SEND", "/queue/x/y.z", Pass},
			{"SEND", "/topic/b", Reject},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := testVerifier(map[string]Principal{"tok": {Name: "alice", Subscribe: tt.subscribe, Send: tt.send}})
			p := newPrincipalStage(t, PrincipalConfig{Verifier: v})
			s := &Session{ID: "1"}
			if r := p.Handle(s, frame("CONNECT", "passcode", "tok"), t0); r.Outcome != Pass {
				t.Fatalf("CONNECT = %+v, want pass", r)
			}
			for _, st := range tt.steps {
				r := p.Handle(s, frame(st.cmd, "destination", st.dest), t0)
				if r.Outcome != st.want {
					t.Errorf("%s %q: outcome %v, want %v (%+v)", st.cmd, st.dest, r.Outcome, st.want, r)
					continue
				}
				if r.Outcome == Reject {
					if r.Reason != outcome.RejectPermission || r.Message == "" {
						t.Errorf("%s %q: Reject %+v, want reason %q and a message", st.cmd, st.dest, r, outcome.RejectPermission)
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
	mallory, alice := malloryToken, aliceToken
	hour := t0.Add(time.Hour)
	v := testVerifier(map[string]Principal{
		"carol": {Name: "carol", Expires: hour},
		"dave":  {Name: "dave", Expires: hour},
	})
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
		{name: "rounded up", token: "carol", wantAsked: []string{"principal:carol"}, detail: "this principal is banned for another 2 s"},
		{name: "last ms", token: "dave", wantAsked: []string{"principal:dave"}, detail: "this principal is banned for another 1 s"},
		{name: "not banned", token: alice, wantAsked: []string{"principal:alice"}, wantOK: true},
		{name: "check fails open", token: mallory, err: errors.New("store down"), wantAsked: []string{"principal:mallory"}, wantOK: true},
		{name: "anonymous not checked", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bans := &fakeBans{left: left, err: tt.err}
			p := newPrincipalStage(t, PrincipalConfig{Verifier: v, Bans: bans})
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
			// The ban's time left, for the ERROR's retry-after.
			want := Result{Outcome: Reject, Reason: outcome.RejectBanned, Message: "banned", Detail: tt.detail,
				RetryAfter: left[tt.wantAsked[0]]}
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
	v := testVerifier(map[string]Principal{"expired": {Name: "mallory", Expires: t0.Add(-time.Hour)}})
	p := newPrincipalStage(t, PrincipalConfig{Verifier: v, Bans: bans})
	expired := "expired"
	r := p.Handle(&Session{}, frame("CONNECT", "passcode", expired), t0)
	if r.Outcome != Reject || r.Reason != outcome.RejectAuth {
		t.Errorf("expired token of a banned principal: Handle = %+v, want a %q rejection", r, outcome.RejectAuth)
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
	p := newPrincipalStage(t, PrincipalConfig{Verifier: testVerifier(nil), Bans: bans})
	connect := frame("CONNECT", "passcode", malloryToken)

	s := &Session{ID: "1"}
	if r := p.Handle(s, connect, t0); r.Outcome != Pass {
		t.Fatalf("first CONNECT: Handle = %+v, want pass", r)
	}
	send := frame("SEND", "destination", "/topic/x")
	st.Handle(s, send, t0)
	if r := st.Handle(s, send, t0); r.Outcome != Reject || r.Reason != outcome.RejectAbuse {
		t.Fatalf("second SEND: Handle = %+v, want a %q rejection", r, outcome.RejectAbuse)
	}
	r := p.Handle(&Session{ID: "2"}, connect, t0)
	if r.Outcome != Reject || r.Reason != outcome.RejectBanned {
		t.Errorf("CONNECT after escalation: Handle = %+v, want a %q rejection", r, outcome.RejectBanned)
	}
}
