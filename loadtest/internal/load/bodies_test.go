package load

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestPaddings(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{BodyChat, BodyGame} {
		for _, n := range []int{0, 375, 4071} {
			pads, err := Paddings(kind, n)
			if err != nil {
				t.Fatalf("Paddings(%s, %d): %v", kind, n, err)
			}
			again, _ := Paddings(kind, n)
			distinct := map[string]bool{}
			for i, p := range pads {
				if len(p) != n || !utf8.Valid(p) || bytes.IndexByte(p, 0) >= 0 {
					t.Fatalf("%s padding %d: %d bytes (want %d), valid UTF-8 %v, NUL-free %v", kind, i, len(p), n, utf8.Valid(p), bytes.IndexByte(p, 0) < 0)
				}
				if !bytes.Equal(p, again[i]) {
					t.Fatalf("%s padding %d differs between calls", kind, i)
				}
				distinct[string(p)] = true
			}
			if n > 100 && len(distinct) < len(pads)*9/10 {
				t.Errorf("%s, %d bytes: %d distinct paddings of %d", kind, n, len(distinct), len(pads))
			}
		}
	}
	if pads, err := Paddings(BodyPad, 100); pads != nil || err != nil {
		t.Errorf("Paddings(pad) = %d paddings, %v; want none, no error", len(pads), err)
	}
	if _, err := Paddings("lorem", 100); err == nil {
		t.Error("Paddings(lorem): no error")
	}
}
