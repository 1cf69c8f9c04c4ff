package stompframe

import "testing"

func TestAppendEscaped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    Version
		in   string
		want string
	}{
		{"1.2 plain", V12, "/topic/a", "/topic/a"},
		{"1.2 all", V12, "a:b\r\n\\c", `a\cb\r\n\\c`},
		{"1.1 keeps CR", V11, "a:b\r\n\\", "a\\cb\r\\n\\\\"},
		{"1.0 raw", V10, "a:b\n\\", "a:b\n\\"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := string(appendEscaped(nil, tt.in, tt.v)); got != tt.want {
				t.Errorf("appendEscaped(%q, %v) = %q, want %q", tt.in, tt.v, got, tt.want)
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
		enc := appendEscaped(nil, s, V12)
		if i := checkEscapes(enc, V12); i >= 0 {
			t.Errorf("checkEscapes(%q) = %d, want -1", enc, i)
		}
		if got := unescape(string(enc)); got != s {
			t.Errorf("unescape(%q) = %q, want %q", enc, got, s)
		}
	}
}
