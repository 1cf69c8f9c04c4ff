package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// t0 is the fixed instant of the step tables, on a whole second.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// zeroRand draws the first place of every window.
func zeroRand() float64 { return 0 }

func newGate(t *testing.T, cfg Config) *Gate {
	t.Helper()
	if cfg.Rand == nil {
		cfg.Rand = zeroRand
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxSessions: -1},
		{Rate: -1},
		{Burst: -1},
		{MemoryThreshold: 1.5},
		{MemoryThreshold: -0.1},
		{MemoryInterval: -time.Second},
		{RetryAfterMax: -time.Second},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// The zero Config admits everything and holds no slot count that bites.
func TestZeroConfigAdmits(t *testing.T) {
	g := newGate(t, Config{})
	for i := range 1000 {
		if d := g.AdmitAt(t0); !d.Admitted {
			t.Fatalf("admission %d refused: %+v", i, d)
		}
	}
	if st := g.StateAt(t0); st.Sessions != 1000 || st.Refusing != "" {
		t.Errorf("state = %+v, want 1000 sessions, not refusing", st)
	}
}

// A step table at fixed instants: the session cap, the bucket, releases,
// and refusals that take no token.
func TestAdmitSteps(t *testing.T) {
	g := newGate(t, Config{MaxSessions: 3, Rate: 2, Burst: 2})
	type step struct {
		at      time.Duration
		release int // Release calls before the decision
		probe   bool
		want    string // "" admitted, else the reason
		retryLo time.Duration
	}
	for i, s := range []step{
		{at: 0, want: ""},
		{at: 0, want: ""},
		{at: 0, want: outcome.AdmissionRate, retryLo: time.Second}, // bucket empty: next token in 0.5 s
		{at: 100 * time.Millisecond, want: outcome.AdmissionRate},  // refusals took no token
		{at: 500 * time.Millisecond, want: ""},                     // the token of 0.5 s
		{at: 5 * time.Second, want: outcome.AdmissionSessions},     // bucket full again, but 3 held
		{at: 5 * time.Second, probe: true, want: outcome.AdmissionSessions},
		{at: 5 * time.Second, release: 1, probe: true, want: ""}, // a probe takes nothing...
		{at: 5 * time.Second, want: ""},                          // ...so the slot is still there
		{at: 5 * time.Second, want: outcome.AdmissionSessions},
		{at: 5 * time.Second, release: 3, want: ""},
		{at: 5 * time.Second, want: outcome.AdmissionRate}, // two tokens at 5 s: both spent
	} {
		for range s.release {
			g.Release()
		}
		var d Decision
		if s.probe {
			d = g.CheckAt(t0.Add(s.at))
		} else {
			d = g.AdmitAt(t0.Add(s.at))
		}
		if d.Admitted != (s.want == "") || d.Reason != s.want {
			t.Fatalf("step %d at %v: %+v, want reason %q", i, s.at, d, s.want)
		}
		if !d.Admitted && (d.RetryAfter < max(s.retryLo, time.Second) || d.RetryAfter%time.Second != 0) {
			t.Errorf("step %d: RetryAfter %v, want whole seconds ≥ %v", i, d.RetryAfter, max(s.retryLo, time.Second))
		}
		if d.Admitted && d.RetryAfter != 0 {
			t.Errorf("step %d: admitted with RetryAfter %v", i, d.RetryAfter)
		}
	}
	if st := g.StateAt(t0.Add(5 * time.Second)); st.Sessions != 1 || st.MaxSessions != 3 {
		t.Errorf("state = %+v, want 1 of 3 sessions", st)
	}
}

// Release never takes the count below zero: a second release of the
// same slot, had a caller made it, frees nothing that others hold.
func TestReleaseWithoutSlot(t *testing.T) {
	g := newGate(t, Config{MaxSessions: 1})
	g.Release()
	if d := g.AdmitAt(t0); !d.Admitted {
		t.Fatalf("first admission refused: %+v", d)
	}
	if d := g.AdmitAt(t0); d.Admitted {
		t.Fatal("a stray Release made room for a second session")
	}
}

// The Retry-After of a rate refusal is never below the time the bucket
// needs for its next token.
func TestRetryAfterAtLeastNextToken(t *testing.T) {
	g := newGate(t, Config{Rate: 0.2, Burst: 1}) // a token every 5 s
	if d := g.AdmitAt(t0); !d.Admitted {
		t.Fatal(d)
	}
	for _, at := range []time.Duration{0, time.Second, 2500 * time.Millisecond, 4 * time.Second} {
		d := g.AdmitAt(t0.Add(at))
		next := 5*time.Second - at
		if d.Admitted || d.RetryAfter < next {
			t.Errorf("at %v: %+v, want a refusal with RetryAfter ≥ %v", at, d, next)
		}
	}
}

// The memory guard: above the threshold new sessions are refused; the
// figure is read at most once per interval.
func TestMemoryGuard(t *testing.T) {
	used, reads := uint64(0), 0
	g := newGate(t, Config{MemoryLimit: 1000, ReadMemory: func() uint64 { reads++; return used }})
	type step struct {
		at    time.Duration
		used  uint64
		want  string
		reads int
	}
	for i, s := range []step{
		{at: 0, used: 900, want: "", reads: 1},                     // at 90 %: not above
		{at: 50 * time.Millisecond, used: 950, want: "", reads: 1}, // cached
		{at: 100 * time.Millisecond, used: 950, want: outcome.AdmissionMemory, reads: 2},
		{at: 150 * time.Millisecond, used: 100, want: outcome.AdmissionMemory, reads: 2}, // cached
		{at: 200 * time.Millisecond, used: 100, want: "", reads: 3},
	} {
		used = s.used
		d := g.AdmitAt(t0.Add(s.at))
		if d.Reason != s.want || reads != s.reads {
			t.Errorf("step %d: %+v after %d reads, want reason %q after %d", i, d, reads, s.want, s.reads)
		}
	}
	used = 990
	st := g.StateAt(t0.Add(time.Second))
	if st.Refusing != outcome.AdmissionMemory || st.MemoryUsed != 990 || st.MemoryLimit != 1000 {
		t.Errorf("state = %+v, want refusing memory at 990 of 1000", st)
	}
}

// A live session is never touched by the memory guard: refusing only
// stops new ones, and a release still frees a slot.
func TestMemoryGuardLeavesLiveSessions(t *testing.T) {
	used := uint64(0)
	g := newGate(t, Config{MaxSessions: 2, MemoryLimit: 100, ReadMemory: func() uint64 { return used }})
	if d := g.AdmitAt(t0); !d.Admitted {
		t.Fatal(d)
	}
	used = 99
	if st := g.StateAt(t0.Add(time.Second)); st.Sessions != 1 || st.Refusing != outcome.AdmissionMemory {
		t.Fatalf("state = %+v", st)
	}
	g.Release()
	if st := g.StateAt(t0.Add(time.Second)); st.Sessions != 0 {
		t.Errorf("sessions after release = %d", st.Sessions)
	}
}

// RuntimeMemory reads a figure that is plausible for a running Go
// program.
func TestRuntimeMemory(t *testing.T) {
	if m := RuntimeMemory(); m < 1<<20 || m > 1<<40 {
		t.Errorf("RuntimeMemory() = %d", m)
	}
}
