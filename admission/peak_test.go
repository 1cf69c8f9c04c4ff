package admission

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A step table at fixed instants: the peak is the most admissions
// within any window shorter than PeakWindow, and never falls.
func TestPeakAdmittedSteps(t *testing.T) {
	g := newGate(t, Config{})
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, s := range []struct {
		at, n, want int
	}{
		{0, 3, 3},    // three at once
		{50, 2, 5},   // five within 50 ms
		{99, 1, 6},   // 99 ms after the first: the same window
		{100, 1, 6},  // the first three fall out: 4 in (0, 100]
		{160, 3, 6},  // 99, 100 and these: 5; the peak stays
		{161, 2, 7},  // 7 in (61, 161]
		{1000, 1, 7}, // a quiet spell keeps the peak
	} {
		for range s.n {
			if d := g.AdmitAt(ms(s.at)); !d.Admitted {
				t.Fatalf("at %d ms: refused %+v", s.at, d)
			}
		}
		if got := g.StateAt(ms(s.at)).PeakAdmitted; got != s.want {
			t.Errorf("after %d at %d ms: peak %d, want %d", s.n, s.at, got, s.want)
		}
	}
	// Refusals and probes are not admissions.
	g2 := newGate(t, Config{MaxSessions: 1})
	g2.AdmitAt(t0)
	g2.AdmitAt(t0)
	g2.CheckAt(t0)
	if got := g2.StateAt(t0).PeakAdmitted; got != 1 {
		t.Errorf("peak with a refusal and a probe = %d, want 1", got)
	}
}

// The bucket's bound, by the Gate's own count: whatever the arrivals,
// no PeakWindow holds more than Rate × PeakWindow + Burst admissions.
func TestPeakAdmittedWithinBucket(t *testing.T) {
	for _, c := range []struct {
		rate  float64
		burst int
	}{{500, 10}, {500, 0}, {50, 1}, {2000, 200}} {
		g := newGate(t, Config{Rate: c.rate, Burst: c.burst})
		most := int(c.rate*PeakWindow.Seconds()) + g.Config().Burst
		rnd := rand.New(rand.NewPCG(1, uint64(c.rate)))
		at := t0
		for range 50_000 {
			// Arrivals far faster than the rate, in clumps.
			at = at.Add(time.Duration(rnd.ExpFloat64() * float64(time.Second) / (20 * c.rate)))
			g.AdmitAt(at)
		}
		if got := g.StateAt(at).PeakAdmitted; got > most || got < g.Config().Burst {
			t.Errorf("rate %v burst %d: peak %d in %v, want %d to %d", c.rate, g.Config().Burst, got, PeakWindow, g.Config().Burst, most)
		}
	}
}

// Decisions whose instants come out of order (read before the lock, in
// another order than they took it) count at the bucket's clock, which
// never steps back: the bound holds by the Gate's count.
func TestPeakAdmittedOutOfOrder(t *testing.T) {
	g := newGate(t, Config{Rate: 100, Burst: 10})
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for i := range 10 {
		if d := g.AdmitAt(t0); !d.Admitted {
			t.Fatalf("burst admission %d refused", i)
		}
	}
	// Two more bucketfuls, each taken by decisions whose instant was
	// read at 50 ms, after others had moved the clock to 200 and 300 ms:
	// at their own instants thirty would lie within one window.
	for _, clock := range []int{200, 300} {
		g.CheckAt(ms(clock))
		for i := range 10 {
			if d := g.AdmitAt(ms(50)); !d.Admitted {
				t.Fatalf("admission %d at the %d ms clock refused", i, clock)
			}
		}
	}
	most := int(100*PeakWindow.Seconds()) + 10
	if got := g.StateAt(ms(300)).PeakAdmitted; got > most {
		t.Errorf("peak %d, want at most %d", got, most)
	}
}
