package retryafter

import (
	"testing"
	"time"
)

// seq returns a rnd that yields vs in turn.
func seq(vs ...float64) func() float64 {
	i := 0
	return func() float64 { v := vs[i%len(vs)]; i++; return v }
}

func TestSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{0, 1}, {-time.Second, 1}, {time.Millisecond, 1}, {334 * time.Millisecond, 1}, {time.Second, 1},
		{time.Second + 1, 2}, {1500 * time.Millisecond, 2}, {time.Minute, 60},
	} {
		if got := Seconds(c.d); got != c.want {
			t.Errorf("Seconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// The window above the true time: at least 1 s, half of it, at most 10 s.
func TestJitteredWindow(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		lo, hi int64
	}{
		{0, 1, 2},
		{300 * time.Millisecond, 1, 2},
		{2 * time.Second, 2, 3},
		{5 * time.Second, 5, 8},
		{10 * time.Second, 10, 15},
		{time.Minute, 60, 70},
		{time.Hour, 3600, 3610},
	} {
		if got := Jittered(c.d, seq(0)); got != c.lo {
			t.Errorf("Jittered(%v) at rnd 0 = %d, want %d", c.d, got, c.lo)
		}
		if got := Jittered(c.d, seq(0.999999)); got != c.hi {
			t.Errorf("Jittered(%v) at rnd ~1 = %d, want %d", c.d, got, c.hi)
		}
	}
}

// Every whole second of the window is drawn equally often.
func TestBetweenUniform(t *testing.T) {
	const n = 1000
	counts := map[int64]int{}
	for i := range n {
		counts[Between(3, 7, seq(float64(i)/n))]++
	}
	if len(counts) != 5 {
		t.Fatalf("drew %v, want the 5 seconds 3..7", counts)
	}
	for s, c := range counts {
		if c != n/5 {
			t.Errorf("second %d drawn %d times, want %d", s, c, n/5)
		}
	}
	if got := Between(0, 0, nil); got != 1 {
		t.Errorf("Between(0, 0) = %d, want 1 (never 0)", got)
	}
	if got := Between(4, 2, nil); got != 4 {
		t.Errorf("Between(4, 2) = %d, want 4", got)
	}
}
