package interceptor

import (
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// TestPrincipalRefresh runs one session through a script of frames, each
// optionally carrying a token header, and checks the outcome and the
// principal after each step. The tokens of testVerifier (alice, bob) last
// an hour; the others are named by what they hold.
func TestPrincipalRefresh(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	v := testVerifier(map[string]Principal{
		"alice-1m":        {Name: "alice", Expires: at(time.Minute)},
		"alice-2h":        {Name: "alice", Expires: at(2 * time.Hour)},
		"alice-3h":        {Name: "alice", Expires: at(3 * time.Hour)},
		"alice-expired":   {Name: "alice", Expires: at(-time.Second)},
		"alice-narrow-1h": {Name: "alice", Expires: at(time.Hour), Send: []string{"/topic/a"}},
		"alice-narrow-1m": {Name: "alice", Expires: at(time.Minute), Send: []string{"/topic/a"}},
	})
	type step struct {
		cmd     string
		dest    string
		token   string // "" sends no token header
		want    Outcome
		expires time.Duration // wanted Expires - t0 after the step
		detail  string        // wanted in a rejection's detail
	}
	tests := []struct {
		name    string
		cfg     PrincipalConfig
		connect string // "" connects anonymously
		steps   []step
	}{
		{"newer token moves the expiry", PrincipalConfig{Verifier: v}, "alice-1m", []step{
			{cmd: "UNSUBSCRIBE", token: aliceToken, want: Pass, expires: time.Hour},
			{cmd: "SEND", dest: "/topic/b", want: Pass, expires: time.Hour},
			{cmd: "ACK", token: "alice-2h", want: Pass, expires: 2 * time.Hour},
			{cmd: "SEND", dest: "/topic/b", token: "alice-3h", want: Pass, expires: 3 * time.Hour},
		}},
		{"the latest token wins, shorter too", PrincipalConfig{Verifier: v}, aliceToken, []step{
			{cmd: "UNSUBSCRIBE", token: "alice-1m", want: Pass, expires: time.Minute},
		}},
		{"new patterns apply from the refreshing frame on", PrincipalConfig{Verifier: v}, "alice-1m", []step{
			{cmd: "SEND", dest: "/topic/b", want: Pass, expires: time.Minute},
			{cmd: "SEND", dest: "/topic/b", token: "alice-narrow-1h", want: Reject, detail: `"/topic/b" is not allowed`},
		}},
		{"patterns widened", PrincipalConfig{Verifier: v}, "alice-narrow-1m", []step{
			{cmd: "SEND", dest: "/topic/b", token: aliceToken, want: Pass, expires: time.Hour},
		}},
		{"another principal", PrincipalConfig{Verifier: v}, "alice-1m", []step{
			{cmd: "UNSUBSCRIBE", token: bobToken, want: Reject, detail: `the token is for "bob", not for the session's principal "alice"`},
		}},
		{"refused token", PrincipalConfig{Verifier: v}, "alice-1m", []step{
			{cmd: "UNSUBSCRIBE", token: "forged", want: Reject, detail: "signature is invalid"},
		}},
		{"expired", PrincipalConfig{Verifier: v}, "alice-1m", []step{
			{cmd: "UNSUBSCRIBE", token: "alice-expired", want: Reject, detail: "expired"},
		}},
		{"anonymous session", PrincipalConfig{Verifier: v}, "", []step{
			{cmd: "UNSUBSCRIBE", token: aliceToken, want: Reject, detail: "authenticated with a token"},
		}},
		{"no verifier: header ignored", PrincipalConfig{}, "", []step{
			{cmd: "UNSUBSCRIBE", token: "anything", want: Pass},
			{cmd: "SEND", dest: "/topic/x", token: bobToken, want: Pass},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPrincipalStage(t, tt.cfg)
			s := &Session{ID: "1"}
			c := frame("CONNECT")
			if tt.connect != "" {
				c.Add("passcode", tt.connect)
			}
			if r := p.Handle(s, c, t0); r.Outcome != Pass {
				t.Fatalf("CONNECT = %+v, want pass", r)
			}
			for i, st := range tt.steps {
				before := *s.Principal
				f := frame(st.cmd, "destination", st.dest, "id", "0")
				if st.token != "" {
					f.Add(TokenHeader, st.token)
				}
				r := p.Handle(s, f, t0)
				if r.Outcome != st.want {
					t.Fatalf("step %d %s: Handle = %+v, want %v", i, st.cmd, r, st.want)
				}
				if r.Outcome == Reject {
					if r.Reason != outcome.RejectAuth && r.Reason != outcome.RejectPermission {
						t.Errorf("step %d %s: Reason %q, want %q or %q", i, st.cmd, r.Reason, outcome.RejectAuth, outcome.RejectPermission)
					}
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
	p := newPrincipalStage(t, PrincipalConfig{Verifier: testVerifier(nil)})
	s := &Session{ID: "1"}
	p.Handle(s, frame("CONNECT", "passcode", aliceToken), t0)
	before := s.Principal
	if r := p.Handle(s, frame("UNSUBSCRIBE", "id", "x", TokenHeader, bobToken), t0); r.Outcome != Reject {
		t.Fatalf("refresh as bob = %+v, want a rejection", r)
	}
	if s.Principal != before {
		t.Errorf("Principal = %+v after a rejected refresh, want it unchanged (%+v)", s.Principal, before)
	}
}

// TestPrincipalRefreshSameTokenVerifiedOnce sends a thousand frames that
// repeat the session's token, as a client can to spend the server's CPU
// on signature checks outside any rate limit: the token is verified once
// at CONNECT and not again, while a different token is still verified.
func TestPrincipalRefreshSameTokenVerifiedOnce(t *testing.T) {
	t.Parallel()
	v := testVerifier(map[string]Principal{"alice-2h": {Name: "alice", Expires: t0.Add(2 * time.Hour)}})
	st, err := NewPrincipalStage(PrincipalConfig{Verifier: v, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{ID: "s1"}
	if r := st.Handle(s, frame("CONNECT", "passcode", aliceToken), t0); r.Outcome != Pass {
		t.Fatalf("CONNECT: %+v", r)
	}
	for i := range 1000 {
		if r := st.Handle(s, frame("SEND", "destination", "/topic/a", "token", aliceToken), t0); r.Outcome != Pass {
			t.Fatalf("SEND %d repeating the token: %+v", i, r)
		}
	}
	if n := len(v.instants()); n != 1 {
		t.Errorf("Verify called %d times for one token sent 1001 times, want 1", n)
	}
	if r := st.Handle(s, frame("SEND", "destination", "/topic/a", "token", "alice-2h"), t0); r.Outcome != Pass {
		t.Fatalf("SEND with a newer token: %+v", r)
	}
	if n := len(v.instants()); n != 2 {
		t.Errorf("Verify called %d times after a newer token, want 2", n)
	}
	if got := s.Principal.Expires; !got.Equal(t0.Add(2 * time.Hour)) {
		t.Errorf("Expires %v after the newer token, want %v", got, t0.Add(2*time.Hour))
	}
	if r := st.Handle(s, frame("SEND", "destination", "/topic/a", "token", "forged"), t0); r.Outcome != Reject {
		t.Errorf("SEND with a forged token: %+v, want a rejection", r)
	}
}
