package stompframe

import (
	"slices"
	"testing"
)

func TestFrameHeaders(t *testing.T) {
	t.Parallel()
	f := &Frame{Command: CommandSend}
	f.Add("a", "1")
	f.Add("b", "2")
	f.Add("a", "3")

	tests := []struct {
		name   string
		lookup string
		want   string
		ok     bool
	}{
		{"first of repeated wins", "a", "1", true},
		{"single", "b", "2", true},
		{"missing", "c", "", false},
		{"case-sensitive", "A", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := f.Lookup(tt.lookup)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Lookup(%q) = %q, %v, want %q, %v", tt.lookup, got, ok, tt.want, tt.ok)
			}
			if got := f.Get(tt.lookup); got != tt.want {
				t.Errorf("Get(%q) = %q, want %q", tt.lookup, got, tt.want)
			}
		})
	}
}

func TestFrameSetDel(t *testing.T) {
	t.Parallel()
	f := &Frame{Headers: hdrs("a", "1", "b", "2", "a", "3")}
	f.Set("a", "x")
	f.Set("c", "y")
	if want := hdrs("a", "x", "b", "2", "a", "3", "c", "y"); !slices.Equal(f.Headers, want) {
		t.Fatalf("after Set: got %v, want %v", f.Headers, want)
	}
	f.Del("a")
	if want := hdrs("b", "2", "c", "y"); !slices.Equal(f.Headers, want) {
		t.Fatalf("after Del: got %v, want %v", f.Headers, want)
	}
}

func TestFrameClone(t *testing.T) {
	t.Parallel()
	f := &Frame{Command: "SEND", Headers: hdrs("a", "1"), Body: []byte("body")}
	c := f.Clone()
	f.Headers[0].Value = "changed"
	f.Body[0] = 'X'
	if c.Get("a") != "1" || string(c.Body) != "body" || c.Command != "SEND" {
		t.Errorf("clone changed with original: got %+v", c)
	}
	if e := (&Frame{}).Clone(); e.Headers != nil || e.Body != nil {
		t.Errorf("Clone of empty frame = %+v, want nil Headers and Body", e)
	}
}

func TestBodyAllowed(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		CommandSend: true, CommandMessage: true, CommandError: true,
		CommandSubscribe: false, CommandConnect: false, "": false,
	} {
		if got := BodyAllowed(cmd); got != want {
			t.Errorf("BodyAllowed(%q) = %v, want %v", cmd, got, want)
		}
	}
}
