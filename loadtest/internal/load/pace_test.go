package load

import (
	"testing"
	"time"
)

// A paced publisher wakes on its own ticks only: never at the end of the
// load, where every publisher waking together would be a burst.
func TestNextTick(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	const period = 100 * time.Millisecond
	end := t0.Add(time.Second)
	for _, tt := range []struct {
		name   string
		now    time.Time
		wantD  time.Duration
		wantOK bool
	}{
		{"on a tick", t0, period, true},
		{"between ticks", t0.Add(30 * time.Millisecond), 70 * time.Millisecond, true},
		{"the last tick before the end", t0.Add(850 * time.Millisecond), 50 * time.Millisecond, true},
		{"the next tick is the end", t0.Add(950 * time.Millisecond), 50 * time.Millisecond, false},
		{"the next tick is past the end", t0.Add(990*time.Millisecond + time.Microsecond), 10*time.Millisecond - time.Microsecond, false},
	} {
		d, ok := nextTick(tt.now, t0, period, end)
		if d != tt.wantD || ok != tt.wantOK {
			t.Errorf("%s: nextTick = %v, %v; want %v, %v", tt.name, d, ok, tt.wantD, tt.wantOK)
		}
	}
}
