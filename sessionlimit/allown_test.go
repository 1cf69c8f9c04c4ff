package sessionlimit

import (
	"testing"
	"time"
)

// TestAllowNAt steps each algorithm through batches at fixed instants:
// a batch passes whole or not at all, and never lets more through than
// the limit allows one frame at a time.
func TestAllowNAt(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	type step struct {
		at   time.Duration
		n    int
		want bool
	}
	tests := []struct {
		name  string
		lim   Limiter
		steps []step
	}{
		{"fixed", NewFixedWindow(10, time.Second), []step{
			{0, 0, true},
			{0, -3, true},
			{0, 11, false}, // larger than the limit: never
			{0, 6, true},
			{100 * time.Millisecond, 5, false}, // 6 + 5 > 10: none counted
			{200 * time.Millisecond, 4, true},  // exactly fills the window
			{300 * time.Millisecond, 1, false},
			{time.Second, 10, true}, // a new window
		}},
		{"sliding", NewSlidingWindow(10, time.Second), []step{
			{0, 10, true},
			{500 * time.Millisecond, 1, false},
			// One window later half of the previous 10 still weigh in.
			{1500 * time.Millisecond, 6, false},
			{1500 * time.Millisecond, 5, true},
			{1500 * time.Millisecond, 1, false},
		}},
		{"token", NewTokenBucket(10, time.Second), []step{
			{0, 11, false},
			{0, 7, true},
			{0, 4, false}, // 3 tokens left
			{0, 3, true},
			{200 * time.Millisecond, 3, false}, // 2 refilled
			{200 * time.Millisecond, 2, true},
		}},
		// n × (window/limit) would overflow int64 here (2^22 × 3.6e12 ns):
		// a batch that large must still be refused, and count nothing.
		{"token slow", NewTokenBucket(1, time.Hour), []step{
			{0, 1 << 22, false},
			{0, 1 << 30, false},
			{0, 1, true},
			{0, 1, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range tt.steps {
				if got := tt.lim.AllowNAt(t0.Add(s.at), s.n); got != s.want {
					t.Fatalf("AllowNAt(t0+%v, %d) = %v, want %v", s.at, s.n, got, s.want)
				}
			}
		})
	}
}

// TestAllowNAtMatchesSingles checks that a refused batch counts nothing:
// after it, single frames pass exactly as if it had never been tried.
func TestAllowNAtMatchesSingles(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, alg := range []Algorithm{Fixed, Sliding, Token} {
		a, _ := New(Config{Algorithm: alg, Limit: 20, Window: time.Second})
		b, _ := New(Config{Algorithm: alg, Limit: 20, Window: time.Second})
		a.AllowNAt(t0, 15)
		b.AllowNAt(t0, 15)
		if a.AllowNAt(t0, 6) {
			t.Fatalf("%s: AllowNAt(t0, 6) after 15 of 20 = true, want false", alg)
		}
		for i := range 10 {
			at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			if ga, gb := a.AllowAt(at), b.AllowAt(at); ga != gb {
				t.Fatalf("%s: frame %d: AllowAt = %v after a refused batch, %v without", alg, i, ga, gb)
			}
		}
	}
}
