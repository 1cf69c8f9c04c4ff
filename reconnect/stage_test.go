package reconnect

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// banRecorder is an interceptor.Banner that keeps the bans.
type banRecorder struct {
	mu   sync.Mutex
	bans map[string]time.Duration
	err  error
}

func (b *banRecorder) Ban(_ context.Context, key string, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bans == nil {
		b.bans = map[string]time.Duration{}
	}
	b.bans[key] = d
	return b.err
}

func (b *banRecorder) keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.bans {
		out = append(out, k)
	}
	return out
}

var connectFrame = &stompframe.Frame{Command: stompframe.CommandConnect}

func newTestStage(t *testing.T, limit int, banner interceptor.Banner, rec *recorder) *Stage {
	t.Helper()
	st, err := NewStage(StageConfig{
		Counter:    newTestCounter(t, Config{Limit: limit, Observer: rec}),
		Banner:     banner,
		BanFor:     2 * time.Minute,
		AddressKey: func(a netip.Addr) string { return "ip:" + a.String() },
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func session(id, ip string, p *interceptor.Principal) *interceptor.Session {
	s := &interceptor.Session{ID: id, Principal: p}
	if ip != "" {
		s.RemoteIP = netip.MustParseAddr(ip)
	}
	return s
}

// An address's CONNECTs pass up to the limit; the next is refused with
// ERROR "banned" and bans the address under the key AddressKey gives,
// for BanFor. Another address is not affected.
func TestStageAddressLoop(t *testing.T) {
	t.Parallel()
	banner, rec := &banRecorder{}, newRecorder()
	st := newTestStage(t, 3, banner, rec)
	for i := 1; i <= 3; i++ {
		if r := st.Handle(session(fmt.Sprint(i), "10.0.0.1", nil), connectFrame, t0); r.Outcome != interceptor.Pass {
			t.Fatalf("CONNECT %d: %v, want pass", i, r.Outcome)
		}
	}
	r := st.Handle(session("4", "10.0.0.1", nil), connectFrame, t0.Add(time.Second))
	if r.Outcome != interceptor.Reject || r.Reason != outcome.RejectBanned || r.Message != "banned" {
		t.Fatalf("CONNECT 4: %+v, want reject banned", r)
	}
	if !strings.Contains(r.Detail, "this address is banned for another 120 s") {
		t.Errorf("ERROR body %q does not say what is banned for how long", r.Detail)
	}
	if d := banner.bans["ip:10.0.0.1"]; d != 2*time.Minute {
		t.Errorf("bans = %v, want ip:10.0.0.1 for 2m", banner.bans)
	}
	if r := st.Handle(session("5", "10.0.0.2", nil), connectFrame, t0.Add(time.Second)); r.Outcome != interceptor.Pass {
		t.Errorf("another address: %v, want pass", r.Outcome)
	}
	if got := rec.get(func(r *recorder) int { return r.banned[ScopeAddress] }); got != 1 {
		t.Errorf("Banned(address) told %d times, want 1", got)
	}
}

// A verified principal connecting from a new address each time is
// caught by its own count and banned under interceptor.PrincipalBanKey.
func TestStagePrincipalLoop(t *testing.T) {
	t.Parallel()
	banner := &banRecorder{}
	st := newTestStage(t, 3, banner, newRecorder())
	alice := &interceptor.Principal{Name: "alice"}
	var last interceptor.Result
	for i := 1; i <= 4; i++ {
		last = st.Handle(session(fmt.Sprint(i), fmt.Sprintf("10.0.1.%d", i), alice), connectFrame, t0)
		if i <= 3 && last.Outcome != interceptor.Pass {
			t.Fatalf("CONNECT %d: %v, want pass", i, last.Outcome)
		}
	}
	if last.Outcome != interceptor.Reject || !strings.Contains(last.Detail, "this principal is banned") {
		t.Fatalf("CONNECT 4: %+v, want reject naming the principal", last)
	}
	if keys := banner.keys(); len(keys) != 1 || keys[0] != interceptor.PrincipalBanKey("alice") {
		t.Errorf("bans %v, want only %q", keys, interceptor.PrincipalBanKey("alice"))
	}
}

// A session that is anonymous is never counted by name, whatever name it
// carries: claiming a victim's name cannot get the victim banned. Its
// address still counts.
func TestStageAnonymousNotCountedByName(t *testing.T) {
	t.Parallel()
	banner := &banRecorder{}
	st := newTestStage(t, 3, banner, newRecorder())
	claimed := &interceptor.Principal{Name: "alice", Anonymous: true}
	for i := range 10 {
		st.Handle(session(fmt.Sprint(i), fmt.Sprintf("10.0.2.%d", i), claimed), connectFrame, t0)
	}
	if keys := banner.keys(); len(keys) != 0 {
		t.Errorf("bans %v after anonymous CONNECTs from 10 addresses naming alice, want none", keys)
	}
	if r := st.Handle(session("v", "10.0.3.1", &interceptor.Principal{Name: "alice"}), connectFrame, t0); r.Outcome != interceptor.Pass {
		t.Errorf("alice with her own token: %+v, want pass", r)
	}
}

// Frames other than CONNECT and STOMP are not counted; STOMP is.
func TestStageCountsOnlyConnect(t *testing.T) {
	t.Parallel()
	st := newTestStage(t, 1, &banRecorder{}, newRecorder())
	s := session("1", "10.0.4.1", nil)
	for range 5 {
		if r := st.Handle(s, &stompframe.Frame{Command: stompframe.CommandSend}, t0); r.Outcome != interceptor.Pass {
			t.Fatalf("SEND: %v, want pass", r.Outcome)
		}
	}
	if r := st.Handle(s, &stompframe.Frame{Command: stompframe.CommandStomp}, t0); r.Outcome != interceptor.Pass {
		t.Fatalf("first STOMP: %v, want pass", r.Outcome)
	}
	if r := st.Handle(s, connectFrame, t0); r.Outcome != interceptor.Reject {
		t.Fatalf("second CONNECT of the address with limit 1: %v, want reject", r.Outcome)
	}
}

// A ban whose recording fails still refuses the CONNECT that looped.
func TestStageBanFails(t *testing.T) {
	t.Parallel()
	st := newTestStage(t, 1, &banRecorder{err: errors.New("redis down")}, newRecorder())
	st.Handle(session("1", "10.0.5.1", nil), connectFrame, t0)
	if r := st.Handle(session("2", "10.0.5.1", nil), connectFrame, t0); r.Outcome != interceptor.Reject {
		t.Errorf("CONNECT over the limit with a failing Banner: %v, want reject", r.Outcome)
	}
}

func TestStageConfigErrors(t *testing.T) {
	t.Parallel()
	c := newTestCounter(t, Config{})
	for _, cfg := range []StageConfig{
		{Banner: &banRecorder{}},
		{Counter: c},
		{Counter: c, Banner: &banRecorder{}, BanFor: -1},
	} {
		if _, err := NewStage(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewStage(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// A CONNECT that takes both its address and its principal over the limit
// bans both and says so.
func TestStageBothOver(t *testing.T) {
	t.Parallel()
	banner := &banRecorder{}
	st := newTestStage(t, 1, banner, newRecorder())
	bob := &interceptor.Principal{Name: "bob"}
	st.Handle(session("1", "10.0.6.1", bob), connectFrame, t0)
	r := st.Handle(session("2", "10.0.6.1", bob), connectFrame, t0)
	if r.Outcome != interceptor.Reject || !strings.Contains(r.Detail, "this address and this principal are banned") {
		t.Fatalf("second CONNECT: %+v, want reject naming both", r)
	}
	if keys := banner.keys(); len(keys) != 2 {
		t.Errorf("bans %v, want the address and the principal", keys)
	}
}
