package admission

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// The window grows with the backlog and shrinks as its seconds pass: a
// step table at fixed instants, rate 2/s, longest Retry-After 10 s.
func TestScheduleWindowSteps(t *testing.T) {
	s := newSchedule(2, 10)
	type step struct {
		at      time.Duration
		reserve int   // refusals before looking
		pending int   // backlog after them
		window  int64 // last second of the next refusal's window
	}
	for i, st := range []step{
		{at: 0, reserve: 0, pending: 0, window: 1},     // 1.25 places: second 1 has 2
		{at: 0, reserve: 1, pending: 1, window: 2},     // 2.5 places: seconds 1-2
		{at: 0, reserve: 3, pending: 4, window: 4},     // 6.25 places: seconds 1-3 hold 6, 1-4 hold 8
		{at: 0, reserve: 6, pending: 10, window: 7},    // 13.75 places
		{at: 0, reserve: 10, pending: 20, window: 10},  // 26.25 > 20 places: bounded by max
		{at: 3 * time.Second, pending: 14, window: 10}, // three seconds passed: 6 retries were due
		{at: 8 * time.Second, pending: 4, window: 4},   // ...and now all but the last two seconds' 4
		{at: 20 * time.Second, pending: 0, window: 1},  // all passed: back to the first second
		{at: 20 * time.Second, reserve: 1, pending: 1, window: 2},
	} {
		now := t0.Add(st.at)
		for range st.reserve {
			s.reserve(now, 1, zeroRand)
		}
		if got := s.pending(now, 1); got != st.pending {
			t.Errorf("step %d at %v: pending %d, want %d", i, st.at, got, st.pending)
		}
		if got := s.window(now, 1); got != st.window {
			t.Errorf("step %d at %v: window ends at %d, want %d", i, st.at, got, st.window)
		}
	}
}

// The draw is uniform over the free places of the window: at rate 4/s
// and 10 clients refused together (window 1.25 × 10 / 4 → 4 seconds, 16
// places), every second is drawn, none more than its capacity.
func TestScheduleDrawUniform(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	counts := map[int64]int{}
	for range 1000 {
		s := newSchedule(4, 60)
		for range 10 {
			counts[s.reserve(t0, 1, rng.Float64)]++
		}
		for i := int64(1); i <= 60; i++ {
			if n := s.at(t0.Unix() + i).n; n > 4 {
				t.Fatalf("second %d holds %d retries, capacity 4", i, n)
			}
		}
	}
	for sec := int64(1); sec <= 3; sec++ {
		// Seconds 1-3 are in every window; 10,000 draws in all.
		if c := counts[sec]; c < 2000 || c > 4000 {
			t.Errorf("second %d drawn %d times of 10,000: %v", sec, c, counts)
		}
	}
	for sec := range counts {
		if sec < 1 || sec > 4 {
			t.Errorf("second %d drawn, outside the window 1-4: %v", sec, counts)
		}
	}
}

// With no free place left within the longest Retry-After, the draw is
// full jitter over [lo, max] and the client still counts.
func TestScheduleSaturated(t *testing.T) {
	s := newSchedule(1, 5)
	seen := map[int64]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		seen[s.reserve(t0, 2, rng.Float64)] = true
	}
	for sec := range seen {
		if sec < 2 || sec > 5 {
			t.Errorf("drew %d, want 2..5", sec)
		}
	}
	if len(seen) != 4 {
		t.Errorf("drew %v, want every second of 2..5", seen)
	}
	if got := s.pending(t0, 1); got != 100 {
		t.Errorf("pending = %d, want 100", got)
	}
}

// The model of the package comment, simulated: N clients refused together
// at an instance admitting rate/s, each retrying once at its Retry-After
// plus a uniform sub-second spread (and again if refused), arrive at
// about the rate and are all admitted within 2 × N / rate.
func TestStormModel(t *testing.T) {
	for _, c := range []struct {
		n    int
		rate float64
	}{
		{10_000, 500},
		{2_000, 100},
		{300, 10},
	} {
		rng := rand.New(rand.NewPCG(3, uint64(c.n)))
		g := newGate(t, Config{Rate: c.rate, RetryAfterMax: time.Minute, Rand: rng.Float64})
		// Each client's next arrival, as an offset from t0.
		type arrival struct {
			at     time.Duration
			client int
		}
		var queue []arrival
		for i := range c.n {
			queue = append(queue, arrival{at: time.Duration(rng.Float64() * float64(100*time.Millisecond)), client: i})
		}
		var retries []time.Duration // arrivals after the first
		var lastAdmit time.Duration
		admitted := 0
		for len(queue) > 0 {
			sort.Slice(queue, func(i, j int) bool { return queue[i].at < queue[j].at })
			a := queue[0]
			queue = queue[1:]
			d := g.AdmitAt(t0.Add(a.at))
			if d.Admitted {
				admitted++
				lastAdmit = a.at
				continue
			}
			next := a.at + d.RetryAfter + time.Duration(rng.Float64()*float64(time.Second))
			retries = append(retries, next)
			queue = append(queue, arrival{at: next, client: a.client})
		}
		ideal := time.Duration(float64(c.n) / c.rate * float64(time.Second))
		if admitted != c.n || lastAdmit > 2*ideal {
			t.Errorf("n=%d rate=%v: %d admitted, the last at %v, want all within %v", c.n, c.rate, admitted, lastAdmit, 2*ideal)
		}
		// Arrivals per second of retries, in 1 s windows sliding by
		// 100 ms: never above 1.2 × the rate plus the sampling noise of
		// the clients' own sub-second spread (3 standard deviations).
		sort.Slice(retries, func(i, j int) bool { return retries[i] < retries[j] })
		peak100, peak1s := 0, 0
		for i, j, k := 0, 0, 0; i < len(retries); i++ {
			for retries[j] <= retries[i]-100*time.Millisecond {
				j++
			}
			for retries[k] <= retries[i]-time.Second {
				k++
			}
			peak100 = max(peak100, i-j+1)
			peak1s = max(peak1s, i-k+1)
		}
		t.Logf("n=%d rate=%v: last admitted at %v (ideal %v), %d retries, peak %d per 100 ms (rate %v), %d per second",
			c.n, c.rate, lastAdmit, ideal, len(retries), peak100, c.rate/10, peak1s)
		if float64(peak1s) > 1.2*c.rate+3*sqrt(c.rate) {
			t.Errorf("n=%d rate=%v: %d retries arrived within one second", c.n, c.rate, peak1s)
		}
	}
}

func sqrt(x float64) float64 {
	z := x
	for range 50 {
		z = (z + x/z) / 2
	}
	return z
}
