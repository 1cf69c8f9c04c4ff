package interceptor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/sessionlimit"
	"github.com/stompgate/stompgate/stompframe"
)

// quietLogger discards what it is given.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newLimitStage builds a LimitStage or fails the test.
func newLimitStage(t *testing.T, cfg LimitConfig) *LimitStage {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	st, err := NewLimitStage(cfg)
	if err != nil {
		t.Fatalf("NewLimitStage(%+v): %v", cfg, err)
	}
	return st
}

var sendFrame = frame("SEND", "destination", "/topic/a")

// sendN hands n SEND frames at now to st and returns how many passed; it
// fails the test on a result that is neither a pass nor a rate-limit drop.
func sendN(t *testing.T, st Stage, s *Session, now time.Time, n int) int {
	t.Helper()
	passed := 0
	for range n {
		switch r := st.Handle(s, sendFrame, now); {
		case r.Outcome == Pass:
			passed++
		case r.Outcome == Drop && r.Reason == outcome.DropRateLimit:
		default:
			t.Fatalf("Handle(SEND at %v) = %+v, want a pass or a %q drop", now.Sub(t0), r, outcome.DropRateLimit)
		}
	}
	return passed
}

func TestLimitStageWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cfg    LimitConfig
		limit  int
		window time.Duration
	}{
		{"defaults: 20 per second", LimitConfig{}, 20, time.Second},
		{"5 per second", LimitConfig{Limit: sessionlimit.Config{Limit: 5, Window: time.Second}}, 5, time.Second},
		{"1 per minute", LimitConfig{Limit: sessionlimit.Config{Limit: 1, Window: time.Minute}}, 1, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newLimitStage(t, tt.cfg)
			s := &Session{ID: "1"}
			for w := range 3 {
				start := t0.Add(time.Duration(w) * tt.window)
				if got := sendN(t, st, s, start, tt.limit); got != tt.limit {
					t.Errorf("window %d: %d of the first %d SEND passed, want all", w, got, tt.limit)
				}
				if got := sendN(t, st, s, start, 3); got != 0 {
					t.Errorf("window %d: %d SEND over the limit passed, want 0", w, got)
				}
				if got := sendN(t, st, s, start.Add(tt.window-time.Nanosecond), 1); got != 0 {
					t.Errorf("window %d: SEND at the window's last instant passed, want dropped", w)
				}
			}
		})
	}
}

func TestLimitStageDropResult(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 1}})
	s := &Session{}
	st.Handle(s, sendFrame, t0)
	got := st.Handle(s, sendFrame, t0)
	if want := (Result{Outcome: Drop, Reason: outcome.DropRateLimit}); got != want {
		t.Errorf("Handle(SEND over the limit) = %+v, want %+v", got, want)
	}
}

func TestLimitStageOtherCommandsPass(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 2}})
	s := &Session{}
	others := []*stompframe.Frame{
		frame("CONNECT"), frame("SUBSCRIBE", "id", "0", "destination", "/topic/a"),
		frame("ACK", "id", "1"), frame("NACK", "id", "1"), frame("UNSUBSCRIBE", "id", "0"),
		frame("BEGIN", "transaction", "t"), frame("COMMIT", "transaction", "t"), frame("DISCONNECT"),
	}
	// Before any SEND: they neither pass through the limiter nor use it up.
	for range 50 {
		for _, f := range others {
			if r := st.Handle(s, f, t0); r.Outcome != Pass {
				t.Fatalf("Handle(%s) = %+v, want pass", f.Command, r)
			}
		}
	}
	if s.Limiter != nil {
		t.Errorf("Session.Limiter = %v after only unlimited frames, want nil", s.Limiter)
	}
	if got := sendN(t, st, s, t0, 5); got != 2 {
		t.Errorf("%d SEND passed after unlimited frames, want 2", got)
	}
	if s.Limiter == nil {
		t.Error("Session.Limiter is nil after a SEND, want the session's limiter")
	}
	// Over the limit: the other commands still pass.
	for _, f := range others {
		if r := st.Handle(s, f, t0); r.Outcome != Pass {
			t.Errorf("Handle(%s) over the SEND limit = %+v, want pass", f.Command, r)
		}
	}
}

func TestLimitStageCommands(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{
		Limit:    sessionlimit.Config{Limit: 3},
		Commands: []string{"SEND", "SUBSCRIBE"},
	})
	s := &Session{}
	sub := frame("SUBSCRIBE", "id", "0", "destination", "/topic/a")
	ack := frame("ACK", "id", "1")
	// SEND and SUBSCRIBE share the session's budget of 3.
	steps := []struct {
		f    *stompframe.Frame
		want Outcome
	}{
		{sendFrame, Pass}, {sub, Pass}, {ack, Pass}, {sub, Pass},
		{sendFrame, Drop}, {sub, Drop}, {ack, Pass},
	}
	for i, step := range steps {
		if got := st.Handle(s, step.f, t0).Outcome; got != step.want {
			t.Errorf("step %d: Handle(%s) = %v, want %v", i, step.f.Command, got, step.want)
		}
	}
}

func TestLimitStageAlgorithms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		alg  sessionlimit.Algorithm
		want string
	}{
		{"", "*sessionlimit.FixedWindow"},
		{sessionlimit.Fixed, "*sessionlimit.FixedWindow"},
		{sessionlimit.Sliding, "*sessionlimit.SlidingWindow"},
		{sessionlimit.Token, "*sessionlimit.TokenBucket"},
	}
	for _, tt := range tests {
		st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Algorithm: tt.alg, Limit: 4}})
		s := &Session{}
		if got := sendN(t, st, s, t0, 10); got != 4 {
			t.Errorf("Algorithm %q: %d of 10 SEND at one instant passed, want 4", tt.alg, got)
		}
		if got := typeName(s.Limiter); got != tt.want {
			t.Errorf("Algorithm %q: Session.Limiter is %s, want %s", tt.alg, got, tt.want)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *sessionlimit.FixedWindow:
		return "*sessionlimit.FixedWindow"
	case *sessionlimit.SlidingWindow:
		return "*sessionlimit.SlidingWindow"
	case *sessionlimit.TokenBucket:
		return "*sessionlimit.TokenBucket"
	case nil:
		return "nil"
	}
	return "another type"
}

// TestLimitStageSessionsIndependent checks that each session has its own
// budget.
func TestLimitStageSessionsIndependent(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 3}})
	a, b := &Session{ID: "a"}, &Session{ID: "b"}
	if got := sendN(t, st, a, t0, 10); got != 3 {
		t.Errorf("session a: %d passed, want 3", got)
	}
	if got := sendN(t, st, b, t0, 10); got != 3 {
		t.Errorf("session b after a used its budget: %d passed, want 3", got)
	}
}

func TestNewLimitStageErrors(t *testing.T) {
	t.Parallel()
	banner := &fakeBanner{}
	tests := []struct {
		name string
		cfg  LimitConfig
		want []string // substrings of the error
	}{
		{"negative EscalateAfter", LimitConfig{EscalateAfter: -1}, []string{"EscalateAfter", "-1"}},
		{"negative EscalateWindow", LimitConfig{EscalateAfter: 3, EscalateWindow: -time.Second}, []string{"EscalateWindow", "-1s"}},
		{"negative BanFor", LimitConfig{EscalateAfter: 3, BanFor: -time.Minute, Banner: banner}, []string{"BanFor", "-1m0s"}},
		{"BanFor without Banner", LimitConfig{EscalateAfter: 3, BanFor: time.Minute}, []string{"BanFor", "Banner"}},
		{"unknown command", LimitConfig{Commands: []string{"SEND", "PUBLISH"}}, []string{"Commands", `"PUBLISH"`}},
		{"server command", LimitConfig{Commands: []string{"MESSAGE"}}, []string{"Commands", `"MESSAGE"`}},
		{"lower-case command", LimitConfig{Commands: []string{"send"}}, []string{"Commands", `"send"`}},
		{"too many commands", LimitConfig{Commands: []string{
			"SEND", "SUBSCRIBE", "UNSUBSCRIBE", "ACK", "NACK", "BEGIN", "COMMIT", "ABORT", "DISCONNECT",
		}}, []string{"Commands", "9"}},
		{"unknown algorithm", LimitConfig{Limit: sessionlimit.Config{Algorithm: "leaky"}}, []string{"Algorithm", `"leaky"`}},
		{"negative limit", LimitConfig{Limit: sessionlimit.Config{Limit: -5}}, []string{"Limit", "-5"}},
		{"negative window", LimitConfig{Limit: sessionlimit.Config{Window: -time.Second}}, []string{"Window", "-1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, err := NewLimitStage(tt.cfg)
			if err == nil {
				t.Fatalf("NewLimitStage(%+v) = %v, nil; want an error", tt.cfg, st)
			}
			if st != nil {
				t.Errorf("NewLimitStage returned a stage with the error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	_, err := NewLimitStage(LimitConfig{Limit: sessionlimit.Config{Algorithm: "leaky"}})
	if !errors.Is(err, sessionlimit.ErrInvalidConfig) {
		t.Errorf("algorithm error %v does not wrap sessionlimit.ErrInvalidConfig", err)
	}
}

func TestNewLimitStageValid(t *testing.T) {
	t.Parallel()
	cfgs := []LimitConfig{
		{},
		{Commands: []string{"SEND", "SUBSCRIBE", "UNSUBSCRIBE", "ACK", "NACK", "BEGIN", "COMMIT", "ABORT"}},
		{EscalateAfter: 5, EscalateWindow: time.Minute},
		{EscalateAfter: 5, BanFor: time.Minute, Banner: &fakeBanner{}},
		{BanFor: 0, Banner: nil},
	}
	for _, cfg := range cfgs {
		if _, err := NewLimitStage(cfg); err != nil {
			t.Errorf("NewLimitStage(%+v): %v", cfg, err)
		}
	}
}

// TestNewLimitStageCopiesCommands checks that changing the caller's
// Commands slice afterwards does not change the stage.
func TestNewLimitStageCopiesCommands(t *testing.T) {
	t.Parallel()
	cmds := []string{"SUBSCRIBE"}
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 1}, Commands: cmds})
	cmds[0] = "SEND"
	s := &Session{}
	if got := sendN(t, st, s, t0, 5); got != 5 {
		t.Errorf("%d of 5 SEND passed a stage limiting SUBSCRIBE, want 5", got)
	}
}

// ban is one call of fakeBanner.Ban.
type ban struct {
	key string
	d   time.Duration
}

// fakeBanner records bans and answers err.
type fakeBanner struct {
	mu         sync.Mutex
	bans       []ban
	err        error
	noDeadline bool // some call had a context without deadline
}

func (b *fakeBanner) Ban(ctx context.Context, key string, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		b.noDeadline = true
	}
	b.bans = append(b.bans, ban{key, d})
	return b.err
}

func (b *fakeBanner) calls() []ban {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.bans)
}

// limitOneForever is a limiter configuration under which every SEND after
// the first is dropped, whenever it comes.
var limitOneForever = sessionlimit.Config{Limit: 1, Window: 24 * time.Hour}

// TestLimitStageEscalation drops SEND frames at the given offsets (after
// one that passes at t0) and checks which drop escalates.
func TestLimitStageEscalation(t *testing.T) {
	t.Parallel()
	sec := time.Second
	tests := []struct {
		name   string
		window time.Duration // EscalateWindow
		drops  []time.Duration
		reject int // index of the drop that is a Reject, -1 for none
	}{
		{"five at once", 10 * sec, []time.Duration{0, 0, 0, 0, 0}, 4},
		{"five within the window", 10 * sec, []time.Duration{0, 2 * sec, 4 * sec, 6 * sec, 9*sec + 999*time.Millisecond}, 4},
		{"fifth at the window's end", 10 * sec, []time.Duration{0, 1 * sec, 2 * sec, 3 * sec, 10 * sec}, -1},
		{"default window is 10s", 0, []time.Duration{0, 1 * sec, 2 * sec, 3 * sec, 9 * sec}, 4},
		{"default window ends at 10s", 0, []time.Duration{0, 1 * sec, 2 * sec, 3 * sec, 10 * sec}, -1},
		{"four, then a new window", 10 * sec, []time.Duration{0, 1 * sec, 2 * sec, 3 * sec, 11 * sec, 12 * sec, 13 * sec, 14 * sec, 15 * sec}, 8},
		{"spread out", 10 * sec, []time.Duration{0, 3 * sec, 6 * sec, 9 * sec, 12 * sec, 15 * sec, 18 * sec, 21 * sec, 24 * sec, 27 * sec, 30 * sec}, -1},
		{"shorter window", 3 * sec, []time.Duration{0, 1 * sec, 2 * sec, 3 * sec, 4 * sec, 5 * sec, 6 * sec, 7 * sec}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newLimitStage(t, LimitConfig{Limit: limitOneForever, EscalateAfter: 5, EscalateWindow: tt.window})
			s := &Session{ID: "1"}
			if r := st.Handle(s, sendFrame, t0); r.Outcome != Pass {
				t.Fatalf("first SEND = %+v, want pass", r)
			}
			for i, at := range tt.drops {
				r := st.Handle(s, sendFrame, t0.Add(at))
				want := Result{Outcome: Drop, Reason: outcome.DropRateLimit}
				if i == tt.reject {
					if r.Outcome != Reject || r.Reason.String() != "rate_limit_abuse" || r.Message != "rate limit exceeded" {
						t.Errorf("drop %d at t0+%v = %+v, want a Reject %q with message %q", i, at, r, "rate_limit_abuse", "rate limit exceeded")
					}
					if r.Detail == "" {
						t.Errorf("drop %d: Reject has no Detail", i)
					}
					return
				}
				if r != want {
					t.Errorf("drop %d at t0+%v = %+v, want %+v", i, at, r, want)
				}
			}
		})
	}
}

// TestLimitStageEscalationSteadyAbuse runs a session at twice its limit
// for a while: with a window shorter than the time it takes to reach
// EscalateAfter drops, it never escalates; with a longer one, it does.
func TestLimitStageEscalationSteadyAbuse(t *testing.T) {
	t.Parallel()
	limit := sessionlimit.Config{Limit: 1, Window: time.Second}
	run := func(window time.Duration) (rejectedAt time.Duration, rejected bool) {
		st := newLimitStage(t, LimitConfig{Limit: limit, EscalateAfter: 5, EscalateWindow: window})
		s := &Session{}
		for sec := range 60 {
			now := t0.Add(time.Duration(sec) * time.Second)
			for range 2 { // one passes, one is dropped
				if r := st.Handle(s, sendFrame, now); r.Outcome == Reject {
					return now.Sub(t0), true
				}
			}
		}
		return 0, false
	}
	if at, ok := run(4 * time.Second); ok {
		t.Errorf("one drop per second with EscalateWindow 4s escalated at t0+%v, want never", at)
	}
	at, ok := run(5 * time.Second)
	if !ok || at != 4*time.Second {
		t.Errorf("one drop per second with EscalateWindow 5s: escalated %v at t0+%v, want true at t0+4s", ok, at)
	}
}

func TestLimitStageNoEscalationByDefault(t *testing.T) {
	t.Parallel()
	banner := &fakeBanner{}
	st := newLimitStage(t, LimitConfig{Limit: limitOneForever, Banner: banner})
	s := &Session{RemoteIP: netip.MustParseAddr("192.0.2.1")}
	st.Handle(s, sendFrame, t0)
	for i := range 1000 {
		if r := st.Handle(s, sendFrame, t0); r.Outcome != Drop {
			t.Fatalf("drop %d = %+v, want a drop: EscalateAfter 0 must never escalate", i, r)
		}
	}
	if got := banner.calls(); len(got) != 0 {
		t.Errorf("Banner called %v without escalation", got)
	}
}

// escalate runs s through st until a Reject and returns it.
func escalate(t *testing.T, st *LimitStage, s *Session) Result {
	t.Helper()
	for range 100 {
		if r := st.Handle(s, sendFrame, t0); r.Outcome == Reject {
			return r
		}
	}
	t.Fatal("no Reject after 100 SEND frames")
	return Result{}
}

func TestLimitStageBan(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr("203.0.113.7")
	ip6 := netip.MustParseAddr("2001:db8::1")
	tests := []struct {
		name      string
		ip        netip.Addr
		principal *Principal
		want      []string
	}{
		{"ip and principal", ip, &Principal{Name: "alice"}, []string{"203.0.113.7", "principal:alice"}},
		{"ipv6", ip6, &Principal{Name: "bob"}, []string{"2001:db8::1", "principal:bob"}},
		{"anonymous principal", ip, &Principal{Name: "anonymous-1", Anonymous: true}, []string{"203.0.113.7"}},
		{"no principal", ip, nil, []string{"203.0.113.7"}},
		{"no ip", netip.Addr{}, &Principal{Name: "carol"}, []string{"principal:carol"}},
		{"neither", netip.Addr{}, &Principal{Name: "anonymous-2", Anonymous: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			banner := &fakeBanner{}
			st := newLimitStage(t, LimitConfig{
				Limit: limitOneForever, EscalateAfter: 3, BanFor: 15 * time.Minute, Banner: banner,
			})
			s := &Session{ID: "1", RemoteIP: tt.ip, Principal: tt.principal}
			escalate(t, st, s)
			var want []ban
			for _, k := range tt.want {
				want = append(want, ban{k, 15 * time.Minute})
			}
			got := banner.calls()
			if !slices.Equal(got, want) {
				t.Errorf("bans %v, want %v", got, want)
			}
			if banner.noDeadline {
				t.Error("Ban was called with a context without deadline")
			}
		})
	}
}

// TestLimitStageBanKey checks that BanKey decides the key a client IP is
// banned under (an IPv6 prefix), and that principals are not affected.
func TestLimitStageBanKey(t *testing.T) {
	t.Parallel()
	banner := &fakeBanner{}
	st := newLimitStage(t, LimitConfig{
		Limit: limitOneForever, EscalateAfter: 3, BanFor: time.Minute, Banner: banner,
		BanKey: func(a netip.Addr) string { return netip.PrefixFrom(a, 64).Masked().String() },
	})
	s := &Session{ID: "1", RemoteIP: netip.MustParseAddr("2001:db8:1:2::9"), Principal: &Principal{Name: "bob"}}
	escalate(t, st, s)
	want := []ban{{"2001:db8:1:2::/64", time.Minute}, {"principal:bob", time.Minute}}
	if got := banner.calls(); !slices.Equal(got, want) {
		t.Errorf("bans %v, want %v", got, want)
	}
}

func TestLimitStageNoBanWithoutBanFor(t *testing.T) {
	t.Parallel()
	banner := &fakeBanner{}
	st := newLimitStage(t, LimitConfig{Limit: limitOneForever, EscalateAfter: 2, Banner: banner})
	s := &Session{RemoteIP: netip.MustParseAddr("192.0.2.1"), Principal: &Principal{Name: "alice"}}
	escalate(t, st, s)
	if got := banner.calls(); len(got) != 0 {
		t.Errorf("bans %v with BanFor 0, want none", got)
	}
}

// TestLimitStageBanFailure checks that a failing Banner still ends the
// session and is logged.
func TestLimitStageBanFailure(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	banner := &fakeBanner{err: errors.New("store down")}
	st := newLimitStage(t, LimitConfig{
		Limit: limitOneForever, EscalateAfter: 2, BanFor: time.Minute, Banner: banner,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := &Session{ID: "s9", RemoteIP: netip.MustParseAddr("192.0.2.1"), Principal: &Principal{Name: "alice"}}
	r := escalate(t, st, s)
	if r.Reason != outcome.RejectAbuse {
		t.Errorf("Reject reason %q, want %q", r.Reason, outcome.RejectAbuse)
	}
	if got := len(banner.calls()); got != 2 {
		t.Errorf("Ban called %d times, want 2 (the IP and the principal)", got)
	}
	out := logs.String()
	for _, want := range []string{"rate limit abuse", "session=s9", "ip=192.0.2.1", "store down", "principal:alice"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q does not mention %q", out, want)
		}
	}
}

// TestLimitStageEscalationLogsOnce checks one log line per escalation and
// none per dropped frame.
func TestLimitStageEscalationLogsOnce(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	st := newLimitStage(t, LimitConfig{
		Limit: limitOneForever, EscalateAfter: 50,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := &Session{ID: "s1"}
	escalate(t, st, s)
	if got := strings.Count(logs.String(), "\n"); got != 1 {
		t.Errorf("%d log lines for 50 drops and one escalation, want 1:\n%s", got, logs.String())
	}
}

// TestLimitStageInChain checks the accounting of limited frames through a
// chain: drops and the escalation count as dropped under their reasons,
// and the observer sees only the frames that passed as passed.
func TestLimitStageInChain(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 2}, EscalateAfter: 3})
	rec := &recorder{}
	c := NewChain(rec, st)
	s := &Session{}
	var outcomes []Outcome
	for range 5 {
		outcomes = append(outcomes, c.Handle(s, sendFrame, t0).Outcome)
	}
	wantOutcomes := []Outcome{Pass, Pass, Drop, Drop, Reject}
	if !slices.Equal(outcomes, wantOutcomes) {
		t.Errorf("outcomes %v, want %v", outcomes, wantOutcomes)
	}
	wantDropped := []dropEvent{{"SEND", "rate_limit"}, {"SEND", "rate_limit"}, {"SEND", "rate_limit_abuse"}}
	if !slices.Equal(rec.dropped, wantDropped) {
		t.Errorf("FrameDropped calls %v, want %v", rec.dropped, wantDropped)
	}
	if got := len(rec.passed); got != 2 {
		t.Errorf("FramePassed called %d times, want 2", got)
	}
	checkCounts(t, s, Counts{Received: 5, Passed: 2, Dropped: 3})
}

// TestLimitStageChargesTransactionsAtCommit fills transactions under the
// limit and commits them: SENDs are pending until COMMIT, a commit that
// fits passes all of them, one that does not drops all of them, and an
// abort drops what it held. received = passed + dropped + pending holds
// after every step.
func TestLimitStageChargesTransactionsAtCommit(t *testing.T) {
	t.Parallel()
	st := newLimitStage(t, LimitConfig{Limit: sessionlimit.Config{Limit: 20, Window: time.Second}})
	rec := &recorder{}
	c := NewChain(rec, st)
	s := &Session{}
	txSend := frame("SEND", "destination", "/topic/a", "transaction", "t1")
	fill := func(n int) {
		for range n {
			if r := c.Handle(s, txSend, t0); r.Outcome != Pass {
				t.Fatalf("SEND in a transaction: outcome %v, want pass (charged at COMMIT)", r.Outcome)
			}
		}
	}
	// 30 SENDs one by one inside a transaction: none is charged yet,
	// although 30 is over the limit of 20 per window.
	fill(15)
	checkCounts(t, s, Counts{Received: 15, Pending: 15})
	if r := c.Commit(s, 15, t0); r.Outcome != Pass {
		t.Fatalf("Commit(15) of 20 = %v, want pass", r.Outcome)
	}
	checkCounts(t, s, Counts{Received: 15, Passed: 15})

	// 10 more in the same window: 5 are left, so all 10 are dropped.
	fill(10)
	if r := c.Commit(s, 10, t0.Add(100*time.Millisecond)); r.Outcome != Drop || r.Reason != outcome.DropRateLimit {
		t.Fatalf("Commit(10) with 5 left = %+v, want drop rate_limit", r)
	}
	checkCounts(t, s, Counts{Received: 25, Passed: 15, Dropped: 10})
	// The refused commit charged nothing: 5 single SENDs still pass.
	for i := range 5 {
		if r := c.Handle(s, sendFrame, t0.Add(200*time.Millisecond)); r.Outcome != Pass {
			t.Fatalf("single SEND %d after the refused commit: %v, want pass", i, r.Outcome)
		}
	}
	fill(3)
	c.Discard(s, 3)
	checkCounts(t, s, Counts{Received: 33, Passed: 20, Dropped: 13})
	wantDropped := slices.Repeat([]dropEvent{{"SEND", "rate_limit"}}, 10)
	wantDropped = append(wantDropped, slices.Repeat([]dropEvent{{"SEND", outcome.DropAborted.String()}}, 3)...)
	if !slices.Equal(rec.dropped, wantDropped) {
		t.Errorf("FrameDropped calls %v, want %v", rec.dropped, wantDropped)
	}
	if got := len(rec.passed); got != 20 {
		t.Errorf("FramePassed called %d times, want 20", got)
	}
	// A transaction larger than the limit can never commit.
	fill(21)
	if r := c.Commit(s, 21, t0.Add(5*time.Second)); r.Outcome != Drop {
		t.Errorf("Commit(21) with a limit of 20 = %v, want drop", r.Outcome)
	}
}
