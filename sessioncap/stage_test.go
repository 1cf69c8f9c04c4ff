package sessioncap

import (
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/stompframe"
)

func TestPrincipalStage(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, "", false, nil)
	st, err := NewPrincipalStage(PrincipalConfig{Limiter: l, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	connect := &stompframe.Frame{Command: stompframe.CommandConnect}
	send := &stompframe.Frame{Command: stompframe.CommandSend}
	session := func(name string, anonymous bool) *interceptor.Session {
		return &interceptor.Session{ID: name, Principal: &interceptor.Principal{Name: name, Anonymous: anonymous}}
	}
	t0 := time.Unix(0, 0)

	a1, a2, a3 := session("alice", false), session("alice", false), session("alice", false)
	for i, s := range []*interceptor.Session{a1, a2} {
		if r := st.Handle(s, connect, t0); r.Outcome != interceptor.Pass {
			t.Fatalf("alice's CONNECT %d = %+v, want pass", i+1, r)
		}
	}
	// A second CONNECT on a session that holds a slot takes no other.
	if r := st.Handle(a1, connect, t0); r.Outcome != interceptor.Pass || l.Held(ScopePrincipal, "alice") != 2 {
		t.Fatalf("repeated CONNECT = %+v, held %d; want pass and 2", r, l.Held(ScopePrincipal, "alice"))
	}
	r := st.Handle(a3, connect, t0)
	if r.Outcome != interceptor.Reject || r.Reason != interceptor.RejectSessionCap || r.Message != "too many sessions" {
		t.Fatalf("alice's CONNECT 3 = %+v, want reject session_cap \"too many sessions\"", r)
	}
	// Other frames, other principals, anonymous ones and sessions with no
	// principal yet pass untouched.
	for _, tc := range []struct {
		s *interceptor.Session
		f *stompframe.Frame
	}{
		{a3, send},
		{session("bob", false), connect},
		{session("anonymous-1", true), connect},
		{&interceptor.Session{ID: "none"}, connect},
	} {
		if r := st.Handle(tc.s, tc.f, t0); r.Outcome != interceptor.Pass {
			t.Errorf("%s %s = %+v, want pass", tc.s.ID, tc.f.Command, r)
		}
	}
	if n := l.Held(ScopePrincipal, "anonymous-1"); n != 0 {
		t.Errorf("anonymous principal holds %d slots, want 0", n)
	}

	// Closing a session frees its slot; closing the refused one frees
	// nothing.
	st.SessionClosed(a3)
	st.SessionClosed(a1)
	if n := l.Held(ScopePrincipal, "alice"); n != 1 {
		t.Fatalf("after closes, alice holds %d, want 1", n)
	}
	if r := st.Handle(a3, connect, t0); r.Outcome != interceptor.Pass {
		t.Errorf("alice's CONNECT after a close = %+v, want pass", r)
	}
	if _, err := NewPrincipalStage(PrincipalConfig{Limiter: l}); err == nil {
		t.Error("NewPrincipalStage with Max 0: no error")
	}
}
