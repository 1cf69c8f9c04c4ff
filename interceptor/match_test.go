package interceptor

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestMatchDestination(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, dest string
		want          bool
	}{
		// Literal patterns.
		{"/topic/a", "/topic/a", true},
		{"/topic/a", "/topic/b", false},
		{"/topic/a", "/topic/ab", false},
		{"/topic/ab", "/topic/a", false},
		{"/topic/a", "/TOPIC/a", false},
		{"/topic/room.42", "/topic/room.42", true},
		// Empty pattern and destination.
		{"", "", true},
		{"", "/topic/a", false},
		{"/topic/a", "", false},
		{"*", "", true},
		{"**", "", true},
		// "*" matches within one segment.
		{"/topic/*", "/topic/a", true},
		{"/topic/*", "/topic/lobby", true},
		{"/topic/*", "/topic/", true},
		{"/topic/*", "/topic/a/b", false},
		{"/topic/*", "/topic/room.42", false},
		{"/topic/room.*", "/topic/room.42", true},
		{"/topic/room.*", "/topic/room.42.chat", false},
		{"/topic/room.*", "/topic/room", false},
		{"/topic/room.*.chat", "/topic/room.42.chat", true},
		{"/topic/room.*.chat", "/topic/room.42.43.chat", false},
		{"/topic/*.chat", "/topic/room.chat", true},
		{"/topic/room*", "/topic/room42", true},
		{"/topic/room*", "/topic/room", true},
		{"/topic/*42", "/topic/room42", true},
		{"/topic/*42", "/topic/room43", false},
		{"*", "lobby", true},
		{"*", "/lobby", false},
		{"*", "a.b", false},
		{"/*/a", "/topic/a", true},
		{"/*/a", "/topic/x/a", false},
		{"/*/*", "/topic/a", true},
		{"*/*", "/a", true},
		// "**" crosses separators.
		{"/topic/**", "/topic/a", true},
		{"/topic/**", "/topic/a/b.c", true},
		{"/topic/**", "/topic/", true},
		{"/topic/**", "/queue/a", false},
		{"/topic/**", "/topic", false},
		{"**", "/any/thing.at.all", true},
		{"/topic/**.chat", "/topic/room.42.chat", true},
		{"/topic/**.chat", "/topic/a/b.chat", true},
		{"/topic/**.chat", "/topic/room.42.chatter", false},
		{"/**/a", "/x/y/z/a", true},
		{"/**/a", "/a", false},
		{"**/a", "/a", true},
		{"/topic/**/*.x", "/topic/a/b/c.x", true},
		{"/topic/**/*.x", "/topic/a/b/c.d.x", false},
		{"***", "a/b", true},
		// Nothing else is special.
		{"/topic/?", "/topic/a", false},
		{"/topic/?", "/topic/?", true},
		{"/topic/[a]", "/topic/a", false},
	}
	for _, tt := range tests {
		if got := MatchDestination(tt.pattern, tt.dest); got != tt.want {
			t.Errorf("MatchDestination(%q, %q) = %v, want %v", tt.pattern, tt.dest, got, tt.want)
		}
	}
}

// TestMatchDestinationLongInput checks that single-segment wildcards stay
// cheap on long destinations: each "*" stops at the next separator.
func TestMatchDestinationLongInput(t *testing.T) {
	t.Parallel()
	dest := "/topic/" + strings.Repeat("a.", 1000) + "b"
	if MatchDestination("/topic/*.*.*.*.*.*.*.*.c", dest) {
		t.Errorf("MatchDestination matched a pattern ending in c against %q...", dest[:20])
	}
	if !MatchDestination("/topic/**.b", dest) {
		t.Errorf("MatchDestination(/topic/**.b) did not match %q...", dest[:20])
	}
	// Several "**" against a destination as long as a header line may
	// be: a backtracking matcher would take hours here.
	long := strings.Repeat("a", 4096)
	if MatchDestination("**a**a**a**b", long) {
		t.Error(`MatchDestination("**a**a**a**b", "aaa...") = true, want false`)
	}
	if !MatchDestination("**a**a**a**a", long) {
		t.Error(`MatchDestination("**a**a**a**a", "aaa...") = false, want true`)
	}
}

// matchReference is the definition of MatchDestination written as plain
// recursion: exponential in the worst case, obviously right on small
// inputs.
func matchReference(pattern, dest string) bool {
	switch {
	case pattern == "":
		return dest == ""
	case strings.HasPrefix(pattern, "**"):
		for i := 0; i <= len(dest); i++ {
			if matchReference(pattern[2:], dest[i:]) {
				return true
			}
		}
		return false
	case pattern[0] == '*':
		for i := 0; i <= len(dest); i++ {
			if matchReference(pattern[1:], dest[i:]) {
				return true
			}
			if i < len(dest) && (dest[i] == '/' || dest[i] == '.') {
				return false
			}
		}
		return false
	}
	return dest != "" && pattern[0] == dest[0] && matchReference(pattern[1:], dest[1:])
}

// TestMatchDestinationReference compares MatchDestination with
// matchReference on every pattern and destination of up to a few
// characters from a small alphabet, and on random longer ones.
func TestMatchDestinationReference(t *testing.T) {
	t.Parallel()
	var all func(alphabet string, n int) []string
	all = func(alphabet string, n int) []string {
		if n == 0 {
			return []string{""}
		}
		shorter := all(alphabet, n-1)
		out := shorter
		for _, s := range shorter {
			if len(s) == n-1 {
				for _, c := range alphabet {
					out = append(out, s+string(c))
				}
			}
		}
		return out
	}
	patterns := all("a/.*", 5)
	dests := all("ab/.", 5)
	for _, p := range patterns {
		for _, d := range dests {
			if got, want := MatchDestination(p, d), matchReference(p, d); got != want {
				t.Fatalf("MatchDestination(%q, %q) = %v, want %v", p, d, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(alphabet string, max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		p, d := random("ab/.**", 10), random("ab/.", 160)
		if got, want := MatchDestination(p, d), matchReference(p, d); got != want {
			t.Fatalf("MatchDestination(%q, %q) = %v, want %v", p, d, got, want)
		}
	}
}
