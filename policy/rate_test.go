package policy

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Rate
		wantErr string
	}{
		{name: "per second", in: "3r/s", want: 3000},
		{name: "per minute", in: "30r/m", want: 500},
		{name: "per minute whole per second", in: "120r/m", want: 2000},
		{name: "leading zero", in: "03r/s", want: 3000},
		{name: "three per minute", in: "3r/m", want: 50},
		{name: "maximum", in: "1000000r/s", want: MaxRate},
		{name: "zero", in: "0r/s", wantErr: `policy: rate "0r/s" is not positive`},
		{name: "per hour", in: "3r/h", wantErr: `policy: rate "3r/h" is not <n>r/s or <n>r/m`},
		{name: "no number", in: "r/s", wantErr: `policy: rate "r/s" is not <n>r/s or <n>r/m`},
		{name: "negative", in: "-3r/s", wantErr: `policy: rate "-3r/s" is not <n>r/s or <n>r/m`},
		{name: "plus sign", in: "+3r/s", wantErr: `policy: rate "+3r/s" is not <n>r/s or <n>r/m`},
		{name: "fraction", in: "1.5r/s", wantErr: `policy: rate "1.5r/s" is not <n>r/s or <n>r/m`},
		{name: "space", in: "3 r/s", wantErr: `policy: rate "3 r/s" is not <n>r/s or <n>r/m`},
		{name: "bare number", in: "3", wantErr: `policy: rate "3" is not <n>r/s or <n>r/m`},
		{name: "empty", in: "", wantErr: `policy: rate "" is not <n>r/s or <n>r/m`},
		{name: "inexact per minute", in: "1r/m", wantErr: `policy: rate "1r/m" is not exact in nginx, which would round it down to 16/1000 r/s; use a multiple of 3r/m`},
		{name: "above maximum", in: "1000001r/s", wantErr: `policy: rate "1000001r/s" is above the maximum 1000000r/s`},
		{name: "overflow", in: "99999999999999999999r/s", wantErr: `policy: rate "99999999999999999999r/s" is above the maximum 1000000r/s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRate(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseRate(%q) error = %v, want %s", tt.in, err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("ParseRate(%q) error does not match ErrInvalid", tt.in)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRate(%q) = %d, %v, want %d, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRateString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate Rate
		want string
	}{
		{3000, "3r/s"},
		{500, "30r/m"},
		{2000, "2r/s"},
		{50, "3r/m"},
		{1500, "90r/m"},
		{16, "0.016r/s"},
		{1234, "1.234r/s"},
		{0, "0r/s"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.rate)), func(t *testing.T) {
			t.Parallel()
			if got := tt.rate.String(); got != tt.want {
				t.Errorf("Rate(%d).String() = %q, want %q", tt.rate, got, tt.want)
			}
		})
	}
}

// TestRateRoundTrip checks that every exact rate survives String and
// ParseRate, which is what keeps nginx and the server on the same number.
func TestRateRoundTrip(t *testing.T) {
	t.Parallel()
	for r := Rate(50); r <= 20000; r += 50 {
		got, err := ParseRate(r.String())
		if err != nil || got != r {
			t.Fatalf("ParseRate(%q) = %d, %v, want %d, nil", r.String(), got, err, r)
		}
	}
}

func TestRateInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate Rate
		want time.Duration
	}{
		{3000, 333333333 * time.Nanosecond},
		{1000, time.Second},
		{500, 2 * time.Second},
		{50, 20 * time.Second},
		{0, 0},
		{-1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.rate.String(), func(t *testing.T) {
			t.Parallel()
			if got := tt.rate.Interval(); got != tt.want {
				t.Errorf("Rate(%d).Interval() = %v, want %v", tt.rate, got, tt.want)
			}
		})
	}
}

func TestRatePerSecond(t *testing.T) {
	t.Parallel()
	if got, want := Rate(500).PerSecond(), 0.5; got != want {
		t.Errorf("Rate(500).PerSecond() = %v, want %v", got, want)
	}
	if got, want := Rate(3000).PerSecond(), 3.0; got != want {
		t.Errorf("Rate(3000).PerSecond() = %v, want %v", got, want)
	}
}

var sinkRate Rate

// BenchmarkParseRate measures ParseRate against its floor, the
// strconv.ParseInt of the number alone (BenchmarkParseRateStrconvPeer).
func BenchmarkParseRate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := ParseRate("30r/m")
		if err != nil {
			b.Fatal(err)
		}
		sinkRate = r
	}
}

// BenchmarkParseRateStrconvPeer is the reference for BenchmarkParseRate.
func BenchmarkParseRateStrconvPeer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		n, err := strconv.ParseInt("30", 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		sinkRate = Rate(n)
	}
}

var sinkString string

// BenchmarkRateString measures String against strconv.FormatInt
// (BenchmarkRateStringStrconvPeer).
func BenchmarkRateString(b *testing.B) {
	b.ReportAllocs()
	r := Rate(500)
	for b.Loop() {
		sinkString = r.String()
	}
}

// BenchmarkRateStringStrconvPeer is the reference for BenchmarkRateString.
func BenchmarkRateStringStrconvPeer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString = strconv.FormatInt(30, 10) + "r/m"
	}
}
