package sessionlimit

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fixed instant tests measure their offsets from. It lies before
// the process started, so it also exercises instants before clockBase.
var t0 = time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

// step is one call in a step table: AllowAt(t0+at) should return want.
type step struct {
	at   time.Duration
	want bool
}

// runSteps calls l.AllowAt for each step in order.
func runSteps(t *testing.T, l Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := l.AllowAt(t0.Add(s.at)); got != s.want {
			t.Errorf("step %d: AllowAt(t0+%v) = %v, want %v", i, s.at, got, s.want)
		}
	}
}

// burst calls l.AllowAt(t0+at) n times and returns how many passed.
func burst(l Limiter, at time.Duration, n int) int {
	passed := 0
	for range n {
		if l.AllowAt(t0.Add(at)) {
			passed++
		}
	}
	return passed
}

// repeat returns n steps at the same offset, all expecting want.
func repeat(at time.Duration, n int, want bool) []step {
	s := make([]step, n)
	for i := range s {
		s[i] = step{at, want}
	}
	return s
}

// join concatenates step lists.
func join(lists ...[]step) []step {
	var all []step
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}
