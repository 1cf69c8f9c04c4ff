package sessioncap

import (
	"sync"
	"testing"
)

func TestMemoryStore(t *testing.T) {
	t.Parallel()
	type step struct {
		op       string // "try", "add", "release"
		key      string
		max      int
		wantOK   bool
		wantHeld int // held before, for "try"; held after, for the others
	}
	tests := []struct {
		name    string
		steps   []step
		wantLen int
	}{
		{
			name: "cap of two",
			steps: []step{
				{op: "try", key: "a", max: 2, wantOK: true, wantHeld: 0},
				{op: "try", key: "a", max: 2, wantOK: true, wantHeld: 1},
				{op: "try", key: "a", max: 2, wantOK: false, wantHeld: 2},
				{op: "try", key: "b", max: 2, wantOK: true, wantHeld: 0},
				{op: "release", key: "a", wantHeld: 1},
				{op: "try", key: "a", max: 2, wantOK: true, wantHeld: 1},
			},
			wantLen: 2,
		},
		{
			name: "add ignores the cap",
			steps: []step{
				{op: "add", key: "a", wantHeld: 1},
				{op: "add", key: "a", wantHeld: 2},
				{op: "try", key: "a", max: 2, wantOK: false, wantHeld: 2},
				{op: "release", key: "a", wantHeld: 1},
				{op: "release", key: "a", wantHeld: 0},
			},
			wantLen: 0,
		},
		{
			name: "release of an idle key",
			steps: []step{
				{op: "release", key: "a", wantHeld: 0},
				{op: "try", key: "a", max: 1, wantOK: true, wantHeld: 0},
			},
			wantLen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewMemoryStore()
			for i, st := range tt.steps {
				switch st.op {
				case "try":
					held, ok := s.TryAcquire(st.key, st.max)
					if ok != st.wantOK || held != st.wantHeld {
						t.Fatalf("step %d: TryAcquire(%q, %d) = %d, %v; want %d, %v", i, st.key, st.max, held, ok, st.wantHeld, st.wantOK)
					}
				case "add":
					s.Add(st.key)
				case "release":
					s.Release(st.key)
				}
				if st.op != "try" {
					if got := s.Held(st.key); got != st.wantHeld {
						t.Fatalf("step %d: after %s, Held(%q) = %d, want %d", i, st.op, st.key, got, st.wantHeld)
					}
				}
			}
			if got := s.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
		})
	}
}

// Concurrent acquires never exceed the cap.
func TestMemoryStoreConcurrent(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	const max, tries = 5, 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range tries {
		wg.Go(func() {
			if _, ok := s.TryAcquire("k", max); ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != max || s.Held("k") != max {
		t.Errorf("%d concurrent TryAcquire granted %d (held %d), want %d", tries, granted, s.Held("k"), max)
	}
}
