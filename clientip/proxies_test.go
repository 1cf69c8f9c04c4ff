package clientip

import (
	"errors"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "10.0.0.0/8", want: []string{"10.0.0.0/8"}},
		{in: " 10.1.2.3/8 , 192.0.2.1,::1 ", want: []string{"10.0.0.0/8", "192.0.2.1/32", "::1/128"}},
		{in: "::ffff:192.0.2.1", want: []string{"192.0.2.1/32"}},
		{in: "10.0.0.0/33", wantErr: `clientip: trusted proxy "10.0.0.0/33": netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`},
		{in: "proxy.local", wantErr: `clientip: trusted proxy "proxy.local": ParseAddr("proxy.local"): unexpected character (at "proxy.local")`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTrustedProxies(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseTrustedProxies(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTrustedProxies(%q) error = %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseTrustedProxies(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i].String() != tt.want[i] {
					t.Errorf("ParseTrustedProxies(%q)[%d] = %s, want %s", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}
