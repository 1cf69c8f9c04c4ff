package stompframe

import (
	"slices"
	"testing"
)

func TestVersionString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v     Version
		want  string
		proto string
	}{
		{V10, "1.0", "v10.stomp"},
		{V11, "1.1", "v11.stomp"},
		{V12, "1.2", "v12.stomp"},
		{0, "Version(0)", ""},
		{13, "Version(13)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if got := tt.v.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := tt.v.Subprotocol(); got != tt.proto {
				t.Errorf("Subprotocol() = %q, want %q", got, tt.proto)
			}
			if tt.proto == "" {
				return
			}
			if got, ok := SubprotocolVersion(tt.proto); got != tt.v || !ok {
				t.Errorf("SubprotocolVersion(%q) = %v, %v, want %v, true", tt.proto, got, ok, tt.v)
			}
			if got, ok := ParseVersion(tt.want); got != tt.v || !ok {
				t.Errorf("ParseVersion(%q) = %v, %v, want %v, true", tt.want, got, ok, tt.v)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   Version
		ok     bool
	}{
		{"", V10, true},
		{"  ", V10, true},
		{"1.0", V10, true},
		{"1.1", V11, true},
		{"1.2", V12, true},
		{"1.2,1.1,1.0", V12, true},
		{"1.0,1.1", V11, true},
		{"1.1, 1.0 ", V11, true},
		{"1.0,2.0", V10, true},
		{"2.0", 0, false},
		{"1.3,abc", 0, false},
		{",", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			got, ok := Negotiate(tt.header)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Negotiate(%q) = %v, %v, want %v, %v", tt.header, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSubprotocolVersionUnknown(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "stomp", "v13.stomp", "V12.STOMP"} {
		if v, ok := SubprotocolVersion(p); ok {
			t.Errorf("SubprotocolVersion(%q) = %v, true, want false", p, v)
		}
	}
	if got, want := Subprotocols(), []string{"v12.stomp", "v11.stomp", "v10.stomp"}; !slices.Equal(got, want) {
		t.Errorf("Subprotocols() = %q, want %q", got, want)
	}
}
