package reconnect

import (
	"fmt"
	"testing"
	"time"
)

func TestMemoryCountAt(t *testing.T) {
	t.Parallel()
	const w = time.Minute
	m, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		key  string
		at   time.Duration
		want int
	}{
		{"a", 0, 1},
		{"a", 10 * time.Second, 2},
		{"b", 10 * time.Second, 1}, // keys count apart
		{"a", 59*time.Second + 999*time.Millisecond, 3},
		{"a", time.Minute, 1}, // the window is over: a new one starts here
		{"a", time.Minute + 30*time.Second, 2},
		{"b", time.Minute + 9*time.Second, 2}, // b's window started at 10s
		{"b", time.Minute + 10*time.Second, 1},
		{"a", 30 * time.Second, 1}, // the clock went back: a new window
		{"a", 31 * time.Second, 2},
	} {
		if got := m.CountAt(step.key, t0.Add(step.at), w); got != step.want {
			t.Errorf("step %d: CountAt(%q, t0+%v) = %d, want %d", i, step.key, step.at, got, step.want)
		}
	}
}

// A full store forgets an expired key first, then the sampled key with
// the fewest CONNECTs: a flood of one-off keys does not push out a key
// that is looping.
func TestMemoryEviction(t *testing.T) {
	t.Parallel()
	const w = time.Minute
	m, err := NewMemoryStore(MemoryConfig{MaxKeys: 4})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		m.CountAt("loop", t0, w)
	}
	m.CountAt("old", t0, w)
	m.CountAt("x", t0.Add(30*time.Second), w)
	m.CountAt("y", t0.Add(30*time.Second), w)
	// At t0+70s "old" and "loop" have expired: a new key takes the place
	// of one of them.
	m.CountAt("z", t0.Add(70*time.Second), w)
	if got := m.Len(); got != 4 {
		t.Fatalf("Len after a new key in a full store = %d, want 4", got)
	}
	for _, k := range []string{"x", "y"} {
		if got := m.CountAt(k, t0.Add(71*time.Second), w); got != 2 {
			t.Errorf("live key %q counts %d after an expired key made room, want 2", k, got)
		}
	}
	// A flood of one-off keys within a live window of "hot".
	m2, _ := NewMemoryStore(MemoryConfig{MaxKeys: 8})
	for range 10 {
		m2.CountAt("hot", t0, w)
	}
	for i := range 1000 {
		m2.CountAt(fmt.Sprint("one-off-", i), t0.Add(time.Second), w)
		if got := m2.Len(); got > 8 {
			t.Fatalf("Len = %d after %d one-off keys, want at most 8", got, i+1)
		}
	}
	if got := m2.CountAt("hot", t0.Add(2*time.Second), w); got != 11 {
		t.Errorf("the looping key after 1000 one-off keys counts %d, want 11 (it was pushed out)", got)
	}
}

func TestMemoryConfig(t *testing.T) {
	t.Parallel()
	if _, err := NewMemoryStore(MemoryConfig{MaxKeys: -1}); err == nil {
		t.Error("NewMemoryStore(MaxKeys -1): no error")
	}
	m, err := NewMemoryStore(MemoryConfig{})
	if err != nil || m.max != DefaultMaxKeys {
		t.Errorf("NewMemoryStore(zero) = max %d, %v; want %d, nil", m.max, err, DefaultMaxKeys)
	}
}
