package stompframe

import (
	"strings"
	"testing"
)

func TestAppendEscaped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		v      Version
		header bool // a name rather than a value
		in     string
		want   string
	}{
		{"1.2 plain", V12, false, "/topic/a", "/topic/a"},
		{"1.2 all", V12, false, "a:b\r\n\\c", `a\cb\r\n\\c`},
		{"1.2 name", V12, true, "a:b\r\n\\c", `a\cb\r\n\\c`},
		{"1.1 has no escape for CR", V11, false, "a:b\r\n\\", "a\\cb \\n\\\\"},
		{"1.0 has no escapes", V10, false, "a:b\n\\\r", "a:b \\ "},
		{"1.0 name keeps its colon out", V10, true, "a:b\n\\", "a_b \\"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(appendEscaped(nil, tt.in, tt.v, tt.header)); got != tt.want {
				t.Errorf("appendEscaped(%q, %v, name %v) = %q, want %q", tt.in, tt.v, tt.header, got, tt.want)
			}
		})
	}
}

func TestCheckEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		v    Version
		want int
	}{
		{`plain`, V12, -1},
		{`a\\b\nc\cd\r`, V12, -1},
		{`a\r`, V11, 1},
		{`\t`, V12, 0},
		{`ab\`, V12, 2},
		{`\\\`, V12, 2},
	}
	for _, tt := range tests {
		if got := checkEscapes([]byte(tt.in), tt.v); got != tt.want {
			t.Errorf("checkEscapes(%q, %v) = %d, want %d", tt.in, tt.v, got, tt.want)
		}
	}
}

func TestEscapeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", "a:b", "\r\n", `\`, `\\c`, "x\\ny:\r"} {
		enc := appendEscaped(nil, s, V12, false)
		if i := checkEscapes(enc, V12); i >= 0 {
			t.Errorf("checkEscapes(%q) = %d, want -1", enc, i)
		}
		if got := unescape(string(enc)); got != s {
			t.Errorf("unescape(%q) = %q, want %q", enc, got, s)
		}
	}
}

// TestEscapedLen holds EscapedLen to what appendEscaped writes, and
// plainPrefix to the first byte that needs care, for every special byte
// at every position of strings longer and shorter than eight bytes.
func TestEscapedLen(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 17, 31} {
		base := strings.Repeat("a/b.c-9Z", 4)[:n]
		cases := []string{base}
		for i := range n {
			for _, c := range []byte{'\\', '\n', ':', '\r', 0x80, 0xff, ';', '[', 0x0b} {
				cases = append(cases, base[:i]+string(c)+base[i+1:])
			}
		}
		for _, s := range cases {
			want := strings.IndexAny(s, "\\\n:\r")
			if want < 0 {
				want = len(s)
			}
			if got := plainPrefix(s); got != want {
				t.Errorf("plainPrefix(%q) = %d, want %d", s, got, want)
			}
			for _, v := range []Version{V10, V11, V12} {
				if got, want := EscapedLen(s, v), len(appendEscaped(nil, s, v, false)); got != want {
					t.Errorf("EscapedLen(%q, %s) = %d, appendEscaped writes %d", s, v, got, want)
				}
			}
		}
	}
}
