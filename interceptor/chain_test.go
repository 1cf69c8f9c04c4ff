package interceptor

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o    Outcome
		want string
	}{
		{Pass, "pass"},
		{Drop, "drop"},
		{Reject, "reject"},
		{Outcome(7), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", uint8(tt.o), got, tt.want)
		}
	}
}

func TestResultConstructors(t *testing.T) {
	t.Parallel()
	if got := Continue(); got != (Result{Outcome: Pass}) {
		t.Errorf("Continue() = %+v, want the zero Result", got)
	}
	x := outcome.NewReject("x", nil)
	if got, want := DropFrame(x), (Result{Outcome: Drop, Reason: x}); got != want {
		t.Errorf("DropFrame(x) = %+v, want %+v", got, want)
	}
	if got, want := RejectFrame(x, "m", "d"), (Result{Outcome: Reject, Reason: x, Message: "m", Detail: "d"}); got != want {
		t.Errorf("RejectFrame(r, m, d) = %+v, want %+v", got, want)
	}
}

func TestChainStopsAtFirstNonPass(t *testing.T) {
	t.Parallel()
	pass := Continue()
	drop := DropFrame(outcome.NewDrop("too_many"))
	reject := RejectFrame(outcome.NewReject("bad", nil), "go away", "details")
	tests := []struct {
		name      string
		results   []Result
		want      Result
		wantCalls []string
	}{
		{"no stages", nil, pass, nil},
		{"all pass", []Result{pass, pass, pass}, pass, []string{"s0", "s1", "s2"}},
		{"first drops", []Result{drop, pass, pass}, drop, []string{"s0"}},
		{"middle drops", []Result{pass, drop, pass}, drop, []string{"s0", "s1"}},
		{"last drops", []Result{pass, pass, drop}, drop, []string{"s0", "s1", "s2"}},
		{"first rejects", []Result{reject, pass}, reject, []string{"s0"}},
		{"reject after pass", []Result{pass, reject, drop}, reject, []string{"s0", "s1"}},
		{"drop before reject", []Result{drop, reject}, drop, []string{"s0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []string
			stages := make([]Stage, len(tt.results))
			for i, r := range tt.results {
				stages[i] = &fixedStage{name: "s" + string(rune('0'+i)), res: r, log: &calls}
			}
			rec := &recorder{}
			c := NewChain(rec, stages...)
			s := &Session{ID: "1"}

			got := c.Handle(s, frame("SEND", "destination", "/topic/a"), t0)
			if got != tt.want {
				t.Errorf("Handle() = %+v, want %+v", got, tt.want)
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("stages called %v, want %v", calls, tt.wantCalls)
			}
			if !slices.Equal(rec.received, []string{"SEND"}) {
				t.Errorf("FrameReceived calls %v, want [SEND]", rec.received)
			}
			var wantDropped []dropEvent
			var wantCounts Counts
			wantCounts.Received = 1
			if tt.want.Outcome == Pass {
				wantCounts.Passed = 1
			} else {
				wantCounts.Dropped = 1
				wantDropped = []dropEvent{{"SEND", tt.want.Reason.String()}}
			}
			if !slices.Equal(rec.dropped, wantDropped) {
				t.Errorf("FrameDropped calls %v, want %v", rec.dropped, wantDropped)
			}
			checkCounts(t, s, wantCounts)
		})
	}
}

func TestChainNilObserver(t *testing.T) {
	t.Parallel()
	c := NewChain(nil, &fixedStage{res: DropFrame(outcome.NewDrop("x"))})
	s := &Session{}
	if got := c.Handle(s, frame("SEND"), t0); got.Outcome != Drop {
		t.Errorf("Handle() outcome = %v, want drop", got.Outcome)
	}
	checkCounts(t, s, Counts{Received: 1, Dropped: 1})
}

func TestChainStagesIsACopy(t *testing.T) {
	t.Parallel()
	a := &fixedStage{name: "a"}
	b := &fixedStage{name: "b", res: DropFrame(outcome.NewDrop("b"))}
	in := []Stage{a, b}
	c := NewChain(nil, in...)
	in[1] = a // changing the caller's slice must not change the chain

	got := c.Stages()
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Stages() = %v, want [a b]", got)
	}
	got[0] = b // nor must changing the returned slice
	if r := c.Handle(&Session{}, frame("SEND"), t0); r.Reason.String() != "b" {
		t.Errorf("Handle() reason = %q, want %q: the chain's stages changed", r.Reason, "b")
	}
}

// TestChainObserverSeesEveryFrame feeds frames of several commands through
// a chain that drops some of them and checks the Observer's calls.
func TestChainObserverSeesEveryFrame(t *testing.T) {
	t.Parallel()
	dropSends := funcStage(func(s *Session, f *stompframe.Frame, now time.Time) Result {
		if f.Command == "SEND" && f.Get("destination") == "/topic/spam" {
			return DropFrame(outcome.NewDrop("spam"))
		}
		return Continue()
	})
	rejectNack := funcStage(func(s *Session, f *stompframe.Frame, now time.Time) Result {
		if f.Command == "NACK" {
			return RejectFrame(outcome.NewReject("no_nack", nil), "NACK refused", "")
		}
		return Continue()
	})
	rec := &recorder{}
	c := NewChain(rec, dropSends, rejectNack)
	s := &Session{ID: "7"}
	frames := []*stompframe.Frame{
		frame("CONNECT"),
		frame("SEND", "destination", "/topic/a"),
		frame("SEND", "destination", "/topic/spam"),
		frame("SUBSCRIBE", "destination", "/topic/a", "id", "0"),
		frame("NACK", "id", "1"),
		frame("SEND", "destination", "/topic/spam"),
	}
	for _, f := range frames {
		c.Handle(s, f, t0)
	}
	wantReceived := []string{"CONNECT", "SEND", "SEND", "SUBSCRIBE", "NACK", "SEND"}
	if !slices.Equal(rec.received, wantReceived) {
		t.Errorf("FrameReceived calls %v, want %v", rec.received, wantReceived)
	}
	wantDropped := []dropEvent{{"SEND", "spam"}, {"NACK", "no_nack"}, {"SEND", "spam"}}
	if !slices.Equal(rec.dropped, wantDropped) {
		t.Errorf("FrameDropped calls %v, want %v", rec.dropped, wantDropped)
	}
	wantPassed := []string{"CONNECT", "SEND", "SUBSCRIBE"}
	if !slices.Equal(rec.passed, wantPassed) {
		t.Errorf("FramePassed calls %v, want %v", rec.passed, wantPassed)
	}
	checkCounts(t, s, Counts{Received: 6, Passed: 3, Dropped: 3})
}

// TestChainReportsOnlyPassed checks that FramePassed sees only the frames
// every stage passed.
func TestChainReportsOnlyPassed(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	n := 0
	everyThird := funcStage(func(s *Session, f *stompframe.Frame, now time.Time) Result {
		n++
		if n%3 == 0 {
			return DropFrame(outcome.NewDrop("third"))
		}
		return Continue()
	})
	c := NewChain(rec, everyThird)
	s := &Session{}
	for range 30 {
		c.Handle(s, frame("SEND"), t0)
	}
	if got, want := len(rec.passed), 20; got != want {
		t.Errorf("FramePassed called %d times, want %d", got, want)
	}
	if got, want := len(rec.dropped), 10; got != want {
		t.Errorf("FrameDropped called %d times, want %d", got, want)
	}
	checkCounts(t, s, Counts{Received: 30, Passed: 20, Dropped: 10})
}

func TestChainNilObserverTransactions(t *testing.T) {
	t.Parallel()
	c := NewChain(nil, funcStage(func(*Session, *stompframe.Frame, time.Time) Result { return Continue() }))
	s := &Session{}
	c.Handle(s, frame("SEND"), t0)
	c.Handle(s, frame("SEND", "transaction", "t"), t0)
	c.Commit(s, 1, t0)
	checkCounts(t, s, Counts{Received: 2, Passed: 2})
}

// randomStage answers an outcome drawn from rng for every frame.
type randomStage struct {
	rng            *rand.Rand
	drop, rejected *outcome.Reason
}

func (st *randomStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	switch st.rng.IntN(6) {
	case 0:
		return DropFrame(st.drop)
	case 1:
		return RejectFrame(st.rejected, "m", "")
	}
	return Continue()
}

// TestChainAccountingProperty runs random chains over random outcome
// sequences and checks received = passed + dropped after every frame, on
// the Session and on the observers, against an independent count.
func TestChainAccountingProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	commands := []string{"SEND", "SUBSCRIBE", "ACK", "UNSUBSCRIBE"}
	for run := range 300 {
		nstages := rng.IntN(5)
		stages := make([]Stage, 0, nstages+2)
		for i := range nstages {
			label := "r" + string(rune('a'+i))
			stages = append(stages, &randomStage{rng: rng,
				drop: outcome.NewDrop(label), rejected: outcome.NewReject(label+"_reject", nil)})
		}
		rec := &recorder{}
		c := NewChain(rec, stages...)
		s := &Session{}
		var want Counts
		reasons := map[string]int{}
		nframes := 1 + rng.IntN(50)
		for i := range nframes {
			cmd := commands[rng.IntN(len(commands))]
			r := c.Handle(s, frame(cmd), t0)
			want.Received++
			if r.Outcome == Pass {
				want.Passed++
			} else {
				want.Dropped++
				reasons[r.Reason.String()]++
			}
			got := s.Counts()
			if got != want {
				t.Fatalf("run %d frame %d: Counts() = %+v, want %+v", run, i, got, want)
			}
			if got.Received != got.Passed+got.Dropped {
				t.Fatalf("run %d frame %d: received %d != passed %d + dropped %d", run, i, got.Received, got.Passed, got.Dropped)
			}
		}
		if got := uint64(len(rec.received)); got != want.Received {
			t.Fatalf("run %d: FrameReceived called %d times, want %d", run, got, want.Received)
		}
		if got := uint64(len(rec.dropped)); got != want.Dropped {
			t.Fatalf("run %d: FrameDropped called %d times, want %d", run, got, want.Dropped)
		}
		for _, d := range rec.dropped {
			reasons[d.reason]--
		}
		for reason, n := range reasons {
			if n != 0 {
				t.Fatalf("run %d: reason %q: FrameDropped count differs from the results by %d", run, reason, n)
			}
		}
		if got := uint64(len(rec.passed)); got != want.Passed {
			t.Fatalf("run %d: FramePassed called %d times, want %d", run, got, want.Passed)
		}
	}
}
