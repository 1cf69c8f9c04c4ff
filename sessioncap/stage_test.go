package sessioncap

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
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
	if r.Outcome != interceptor.Reject || r.Reason != outcome.RejectSessionCap || r.Message != "too many sessions" {
		t.Fatalf("alice's CONNECT 3 = %+v, want reject session_cap \"too many sessions\"", r)
	}
	// Only a session's end makes room: no time to retry at.
	if r.RetryAfter != 0 {
		t.Errorf("alice's CONNECT 3: RetryAfter %v, want none", r.RetryAfter)
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

// TestPrincipalStageFailClosed: a cap that cannot be checked (Redis
// unreachable, failing closed) refuses with a time to retry at, which the
// ERROR frame carries as retry-after.
func TestPrincipalStageFailClosed(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	// Redis is tried again a minute after the outage began at the
	// soonest: the CONNECT below meets the fallback's answer.
	l, err := New(Config{FailClosed: true, RetryInterval: time.Minute, Logger: slog.New(slog.DiscardHandler),
		Redis: newTestRedisStore(t, srv.URL(), RedisConfig{Logger: slog.New(slog.DiscardHandler)})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	st, err := NewPrincipalStage(PrincipalConfig{Limiter: l, Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The refused connection puts the limiter in fallback, failing
	// closed.
	if _, d, err := l.Acquire(t.Context(), ScopeIP, "ws:192.0.2.10", 5); err != nil || d.Store != StoreNone {
		t.Fatalf("acquire with Redis down: %+v, %v; want refused by none", d, err)
	}
	s := &interceptor.Session{ID: "1", Principal: &interceptor.Principal{Name: "alice"}}
	r := st.Handle(s, &stompframe.Frame{Command: stompframe.CommandConnect}, time.Unix(0, 0))
	if r.Outcome != interceptor.Reject || r.Reason != outcome.RejectSessionCap || r.RetryAfter != DefaultRetryAfter {
		t.Errorf("CONNECT with the cap unreachable = %+v, want a session_cap rejection with RetryAfter %v", r, DefaultRetryAfter)
	}
}

// TestPrincipalStageDisplaces: at the cap, with Displace, a new session
// takes the slot of the principal's oldest, which Disconnect is asked to
// end; the oldest's own close then gives nothing back, and the count
// stays at the cap.
func TestPrincipalStageDisplaces(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, "", false, nil)
	var ended []string
	st, err := NewPrincipalStage(PrincipalConfig{Limiter: l, Max: 2, Displace: true,
		Disconnect: func(id string) { ended = append(ended, id) }})
	if err != nil {
		t.Fatal(err)
	}
	connect := &stompframe.Frame{Command: stompframe.CommandConnect}
	t0 := time.Unix(0, 0)
	var ss []*interceptor.Session
	for i := range 4 {
		s := &interceptor.Session{ID: fmt.Sprintf("s%d", i), Principal: &interceptor.Principal{Name: "alice"}}
		if r := st.Handle(s, connect, t0); r.Outcome != interceptor.Pass {
			t.Fatalf("CONNECT %d = %+v, want pass", i, r)
		}
		ss = append(ss, s)
	}
	if got := strings.Join(ended, ","); got != "s0,s1" {
		t.Fatalf("displaced %q, want s0,s1 (the oldest first)", got)
	}
	for _, s := range ss[:2] {
		st.SessionClosed(s)
	}
	if n := l.Held(ScopePrincipal, "alice"); n != 2 {
		t.Fatalf("after the displaced sessions closed alice holds %d, want 2", n)
	}
	st.SessionClosed(ss[2])
	if n := l.Held(ScopePrincipal, "alice"); n != 1 {
		t.Fatalf("after a close alice holds %d, want 1", n)
	}
	if _, err := NewPrincipalStage(PrincipalConfig{Limiter: l, Max: 1, Displace: true}); err == nil {
		t.Error("Displace without Disconnect: no error")
	}
}

// TestRedisStoreDisplaces: with displace, a key at max drops its oldest
// lease, by Redis time whichever store took it, and names its owner.
func TestRedisStoreDisplaces(t *testing.T) {
	t.Parallel()
	srv := testredis.Start(t)
	a := newTestRedisStore(t, srv.URL(), RedisConfig{})
	b := newTestRedisStore(t, srv.URL(), RedisConfig{})
	ctx := t.Context()
	const key = "principal:alice"
	for i, s := range []*RedisStore{b, a} {
		if _, _, ok, d, err := s.AcquireFor(ctx, key, 2, fmt.Sprintf("s%d", i), true); err != nil || !ok || len(d) != 0 {
			t.Fatalf("acquire %d: %v, displaced %q, %v", i, ok, d, err)
		}
		time.Sleep(2 * time.Millisecond) // distinct birth times in ms
	}
	id, held, ok, displaced, err := a.AcquireFor(ctx, key, 2, "s2", true)
	if err != nil || !ok || held != 2 || len(displaced) != 1 || LeaseOwner(displaced[0]) != "s0" {
		t.Fatalf("acquire at the cap = %q, held %d, %v, displaced %q, %v; want allowed, s0 displaced", id, held, ok, displaced, err)
	}
	if LeaseOwner(id) != "s2" {
		t.Errorf("LeaseOwner(%q) = %q, want s2", id, LeaseOwner(id))
	}
	if n, err := a.Held(ctx, key); err != nil || n != 2 {
		t.Errorf("Held = %d, %v; want 2", n, err)
	}
	if _, _, ok, _, err := b.AcquireFor(ctx, key, 2, "s3", false); err != nil || ok {
		t.Errorf("acquire at the cap without displace = %v, %v; want refused", ok, err)
	}
}

func TestLeaseOwner(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"1764201600000|inst:1|SESSION", "SESSION"},
		{"1764201600000|inst:1|", ""},
		{"inst:1", ""},
		{"", ""},
	} {
		if got := LeaseOwner(tt.id); got != tt.want {
			t.Errorf("LeaseOwner(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}
