package interceptor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// TestTokenChecks runs one session through token headers at fixed
// instants and checks, after each, the outcome and how many times the
// Verifier was called in all: remembered tokens cost none, new ones are
// budgeted per window.
func TestTokenChecks(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tokens := map[string]Principal{}
	for i := range 8 {
		tokens[fmt.Sprintf("alice-%d", i)] = Principal{Name: "alice", Expires: at(2 * time.Hour)}
	}
	tokens["alice-short"] = Principal{Name: "alice", Expires: at(time.Minute)}
	type step struct {
		at       time.Duration
		token    string
		want     Outcome
		verified int // Verify calls so far, CONNECT's included
	}
	tests := []struct {
		name  string
		cfg   PrincipalConfig
		steps []step
	}{
		{"two tokens alternating cost two checks", PrincipalConfig{}, []step{
			{0, "alice-0", Pass, 2},
			{0, aliceToken, Pass, 2},
			{0, "alice-0", Pass, 2},
			{time.Second, aliceToken, Pass, 2},
			{time.Second, "alice-0", Pass, 2},
		}},
		{"new tokens over the budget end the session", PrincipalConfig{TokenChecks: 3, TokenCheckWindow: time.Minute}, []step{
			{0, "alice-0", Pass, 2},
			{0, "alice-1", Pass, 3},
			{time.Second, "alice-2", Pass, 4},
			{2 * time.Second, "alice-3", Reject, 4},
		}},
		{"remembered tokens are free over the budget", PrincipalConfig{TokenChecks: 1}, []step{
			{0, "alice-0", Pass, 2},
			{0, aliceToken, Pass, 2},
			{0, "alice-0", Pass, 2},
			{0, "alice-1", Reject, 2},
		}},
		{"the budget renews with the window", PrincipalConfig{TokenChecks: 2, TokenCheckWindow: time.Minute}, []step{
			{0, "alice-0", Pass, 2},
			{time.Second, "alice-1", Pass, 3},
			{time.Minute, "alice-2", Pass, 4},
			{time.Minute + time.Second, "alice-3", Pass, 5},
			{time.Minute + 2*time.Second, "alice-4", Reject, 5},
		}},
		{"the oldest token is forgotten", PrincipalConfig{RememberedTokens: 2, TokenChecks: 100}, []step{
			{0, "alice-0", Pass, 2}, // remembers CONNECT's and alice-0
			{0, "alice-1", Pass, 3}, // replaces CONNECT's
			{0, "alice-0", Pass, 3},
			{0, aliceToken, Pass, 4}, // checked again
		}},
		{"an expired remembered token is checked again, and refused", PrincipalConfig{}, []step{
			{0, "alice-short", Pass, 2},
			{0, aliceToken, Pass, 2},
			{2 * time.Minute, "alice-short", Reject, 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var now time.Time
			tt.cfg.Verifier = testVerifier(tokens)
			tt.cfg.Now = func() time.Time { return now }
			now = t0
			p := newPrincipalStage(t, tt.cfg)
			v := tt.cfg.Verifier.(*fakeVerifier)
			s := &Session{ID: "1"}
			if r := p.Handle(s, frame("CONNECT", "passcode", aliceToken), t0); r.Outcome != Pass {
				t.Fatalf("CONNECT = %+v", r)
			}
			for i, st := range tt.steps {
				now = t0.Add(st.at)
				r := p.Handle(s, frame("ACK", "id", "1", TokenHeader, st.token), now)
				if r.Outcome != st.want {
					t.Fatalf("step %d: Handle(token %s) at t0+%v = %+v, want %v", i, st.token, st.at, r, st.want)
				}
				if n := len(v.instants()); n != st.verified {
					t.Errorf("step %d: Verify called %d times at t0+%v, want %d", i, n, st.at, st.verified)
				}
				if r.Outcome == Pass && !strings.HasPrefix(s.Principal.Name, "alice") {
					t.Errorf("step %d: principal %q", i, s.Principal.Name)
				}
			}
		})
	}
}

// TestTokenFloodRejection: the rejection says what to do.
func TestTokenFloodRejection(t *testing.T) {
	t.Parallel()
	p := newPrincipalStage(t, PrincipalConfig{Verifier: testVerifier(map[string]Principal{"alice-2": {Name: "alice"}}), TokenChecks: 1})
	s := &Session{ID: "1"}
	p.Handle(s, frame("CONNECT", "passcode", aliceToken), t0)
	p.Handle(s, frame("ACK", "id", "1", TokenHeader, "alice-2"), t0)
	r := p.Handle(s, frame("ACK", "id", "1", TokenHeader, "forged"), t0)
	if r.Outcome != Reject || r.Reason != outcome.RejectTokenFlood || r.Message != "too many token checks" ||
		r.Detail != "at most 1 new tokens per 1m0s per session; send a token once, when it is new" {
		t.Errorf("Handle = %+v, want the token_flood rejection", r)
	}
}

func TestTokenConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  PrincipalConfig
		want string
	}{
		{PrincipalConfig{RememberedTokens: -1}, "interceptor: PrincipalConfig.RememberedTokens -1 is negative"},
		{PrincipalConfig{TokenChecks: -1}, "interceptor: PrincipalConfig.TokenChecks -1 is negative"},
		{PrincipalConfig{TokenCheckWindow: -time.Second}, "interceptor: PrincipalConfig.TokenCheckWindow -1s is negative"},
	} {
		if _, err := NewPrincipalStage(tc.cfg); err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewPrincipalStage = %v, want %q matching ErrInvalidConfig", err, tc.want)
		}
	}
}
