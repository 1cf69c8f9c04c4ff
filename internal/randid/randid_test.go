package randid

import "testing"

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New(15)
		if len(id) != 24 {
			t.Fatalf("New(15) = %q, %d characters; want 24", id, len(id))
		}
		for _, c := range id {
			if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
				t.Fatalf("New(15) = %q has %q, outside base32", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("New(15) repeated %q", id)
		}
		seen[id] = true
	}
	if got := len(New(5)); got != 8 {
		t.Errorf("len(New(5)) = %d, want 8", got)
	}
}
