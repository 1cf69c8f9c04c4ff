package sessionlimit

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestParseAlgorithm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    Algorithm
		wantErr string
	}{
		{name: "empty is the default", in: "", want: Fixed},
		{name: "fixed", in: "fixed", want: Fixed},
		{name: "sliding", in: "sliding", want: Sliding},
		{name: "token", in: "token", want: Token},
		{name: "case is ignored", in: "Sliding", want: Sliding},
		{name: "unknown", in: "x", wantErr: `sessionlimit: Algorithm "x" is not one of fixed, sliding, token`},
		{name: "padded", in: " fixed", wantErr: `sessionlimit: Algorithm " fixed" is not one of fixed, sliding, token`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAlgorithm(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseAlgorithm(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
				}
				if !strings.HasPrefix(err.Error(), "sessionlimit: Algorithm ") {
					t.Errorf("error %q does not name the Algorithm setting", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseAlgorithm(%q) = %q, %v, want %q, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestAlgorithmUnmarshalText(t *testing.T) {
	t.Parallel()
	var a Algorithm
	if err := a.UnmarshalText([]byte("token")); err != nil || a != Token {
		t.Errorf("UnmarshalText(token) = %v, algorithm %q, want nil, %q", err, a, Token)
	}
	if err := a.UnmarshalText([]byte("leaky")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("UnmarshalText(leaky) = %v, want ErrInvalidConfig", err)
	}
	if a != Token {
		t.Errorf("after a failed UnmarshalText algorithm = %q, want it unchanged (%q)", a, Token)
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Config
		want Config
	}{
		{name: "zero", in: Config{}, want: Config{Algorithm: Fixed, Limit: 20, Window: time.Second}},
		{
			name: "set fields kept",
			in:   Config{Algorithm: Token, Limit: 5, Window: time.Minute},
			want: Config{Algorithm: Token, Limit: 5, Window: time.Minute},
		},
		{
			name: "negative left for Validate",
			in:   Config{Limit: -1, Window: -time.Second},
			want: Config{Algorithm: Fixed, Limit: -1, Window: -time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Errorf("%+v.WithDefaults() = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // empty: valid
	}{
		{name: "zero", cfg: Config{}},
		{name: "all set", cfg: Config{Algorithm: Sliding, Limit: 100, Window: 10 * time.Second}},
		{name: "largest limit", cfg: Config{Limit: math.MaxInt32}},
		{name: "negative window", cfg: Config{Window: -time.Second}, wantErr: "sessionlimit: Window -1s is negative"},
		{name: "negative limit", cfg: Config{Limit: -1}, wantErr: "sessionlimit: Limit -1 is negative"},
		{name: "limit too large", cfg: Config{Limit: math.MaxInt32 + 1}, wantErr: "sessionlimit: Limit 2147483648 exceeds 2147483647"},
		{name: "unknown algorithm", cfg: Config{Algorithm: "leaky"}, wantErr: `sessionlimit: Algorithm "leaky" is not one of fixed, sliding, token`},
		{
			name:    "every error reported",
			cfg:     Config{Algorithm: "x", Limit: -2, Window: -time.Millisecond},
			wantErr: "sessionlimit: Algorithm \"x\" is not one of fixed, sliding, token\nsessionlimit: Limit -2 is negative\nsessionlimit: Window -1ms is negative",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("%+v.Validate() = %v, want nil", tt.cfg, err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("%+v.Validate() = %v, want %q", tt.cfg, err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		check   func(Limiter) bool
		wantErr string
	}{
		{name: "zero config is a fixed window", cfg: Config{}, check: isType[*FixedWindow]},
		{name: "fixed", cfg: Config{Algorithm: Fixed}, check: isType[*FixedWindow]},
		{name: "sliding", cfg: Config{Algorithm: Sliding}, check: isType[*SlidingWindow]},
		{name: "token", cfg: Config{Algorithm: Token}, check: isType[*TokenBucket]},
		{name: "invalid", cfg: Config{Window: -time.Second}, wantErr: "sessionlimit: Window -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || l != nil {
					t.Errorf("New(%+v) = %v, %v, want nil, %q", tt.cfg, l, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v) error = %v, want nil", tt.cfg, err)
			}
			if !tt.check(l) {
				t.Errorf("New(%+v) = %T, wrong type", tt.cfg, l)
			}
		})
	}
}

func isType[T Limiter](l Limiter) bool {
	_, ok := l.(T)
	return ok
}

// TestExactlyLimitFromIdle checks that every algorithm passes exactly Limit
// of a large burst when the session has been idle long enough to start
// afresh (two windows), with each Config's own defaults applied.
func TestExactlyLimitFromIdle(t *testing.T) {
	t.Parallel()
	for _, alg := range []Algorithm{Fixed, Sliding, Token} {
		for _, cfg := range []Config{
			{Algorithm: alg},
			{Algorithm: alg, Limit: 1, Window: time.Millisecond},
			{Algorithm: alg, Limit: 7, Window: 3 * time.Second},
			{Algorithm: alg, Limit: 1000, Window: time.Minute},
		} {
			t.Run(string(alg)+"/"+cfg.WithDefaults().Window.String(), func(t *testing.T) {
				t.Parallel()
				want := cfg.WithDefaults().Limit
				window := cfg.WithDefaults().Window
				l, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for k := range 5 {
					at := time.Duration(k) * 2 * window
					if got := burst(l, at, 3*want); got != want {
						t.Errorf("burst of %d at t0+%v: %d passed, want %d", 3*want, at, got, want)
					}
				}
			})
		}
	}
}

func TestFactory(t *testing.T) {
	t.Parallel()
	if _, err := NewFactory(Config{Limit: -3}); err == nil || err.Error() != "sessionlimit: Limit -3 is negative" {
		t.Errorf("NewFactory(Limit -3) error = %v, want %q", err, "sessionlimit: Limit -3 is negative")
	}

	cfg := Config{Algorithm: Sliding, Limit: 3, Window: time.Minute}
	f, err := NewFactory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Config(); got != cfg {
		t.Errorf("Factory.Config() = %+v, want %+v", got, cfg)
	}
	a, b := f.New(), f.New()
	if got := burst(a, 0, 10); got != 3 {
		t.Errorf("first limiter passed %d of 10, want 3", got)
	}
	if got := burst(b, 0, 10); got != 3 {
		t.Errorf("second limiter passed %d of 10, want 3: limiters share state", got)
	}

	var zero Factory
	if got, want := zero.Config(), (Config{}).WithDefaults(); got != want {
		t.Errorf("zero Factory.Config() = %+v, want %+v", got, want)
	}
	if got := burst(zero.New(), 0, 50); got != DefaultLimit {
		t.Errorf("zero Factory limiter passed %d of 50, want %d", got, DefaultLimit)
	}
}

// TestFactoryCapsWindow checks that an absurdly long window neither
// overflows nor refuses to work.
func TestFactoryCapsWindow(t *testing.T) {
	t.Parallel()
	for _, alg := range []Algorithm{Fixed, Sliding, Token} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			l, err := New(Config{Algorithm: alg, Limit: 2, Window: math.MaxInt64})
			if err != nil {
				t.Fatal(err)
			}
			runSteps(t, l, []step{{0, true}, {0, true}, {0, false}, {100 * 24 * time.Hour, false}})
		})
	}
}

func TestZeroValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		l    Limiter
	}{
		{"FixedWindow", new(FixedWindow)},
		{"SlidingWindow", new(SlidingWindow)},
		{"TokenBucket", new(TokenBucket)},
		{"NewFixedWindow(0, 0)", NewFixedWindow(0, 0)},
		{"NewSlidingWindow(-1, -1)", NewSlidingWindow(-1, -1)},
		{"NewTokenBucket(0, -1)", NewTokenBucket(0, -1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := burst(tt.l, 0, 50); got != DefaultLimit {
				t.Errorf("%s passed %d of 50 at t0, want %d", tt.name, got, DefaultLimit)
			}
			if got := burst(tt.l, 2*DefaultWindow, 50); got != DefaultLimit {
				t.Errorf("%s passed %d of 50 at t0+2s, want %d", tt.name, got, DefaultLimit)
			}
		})
	}
}

func TestNanos(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name   string
		early  time.Time
		late   time.Time
		wantLT bool // nanos(early) < nanos(late)
	}{
		{"now after the base", clockBase, now, true},
		{"before the base, far apart", time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC), t0, true},
		{"far future does not wrap", now, time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"year one stays below now", time.Time{}, now, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, l := nanos(tt.early), nanos(tt.late)
			if got := e < l; got != tt.wantLT {
				t.Errorf("nanos(%v) = %d < nanos(%v) = %d is %v, want %v", tt.early, e, tt.late, l, got, tt.wantLT)
			}
		})
	}
	if got := nanos(t0); got <= 0 {
		t.Errorf("nanos(t0) = %d, want > 0 so that the zero state reads as long ago", got)
	}
}

func TestAllowAtDoesNotAllocate(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process.
	for _, alg := range []Algorithm{Fixed, Sliding, Token} {
		l, err := New(Config{Algorithm: alg})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		if got := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Millisecond)
			l.AllowAt(now)
		}); got != 0 {
			t.Errorf("%s AllowAt allocates %v times per call, want 0", alg, got)
		}
	}
	f, err := NewFactory(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(1000, func() { sinkLimiter = f.New() }); got != 1 {
		t.Errorf("Factory.New allocates %v times per call, want 1", got)
	}
}

// sinkLimiter keeps made limiters from being optimized away.
var sinkLimiter Limiter

// TestSizes pins the per-session memory the package documents.
func TestSizes(t *testing.T) {
	t.Parallel()
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are documented for 64-bit platforms")
	}
	tests := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"FixedWindow", unsafe.Sizeof(FixedWindow{}), 32},
		{"SlidingWindow", unsafe.Sizeof(SlidingWindow{}), 40},
		{"TokenBucket", unsafe.Sizeof(TokenBucket{}), 32},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("unsafe.Sizeof(%s{}) = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

func TestConfigErrorMessage(t *testing.T) {
	t.Parallel()
	err := configErrorf("Window %v is negative", -time.Second)
	if got, want := err.Error(), "sessionlimit: Window -1s is negative"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !strings.HasPrefix(ErrInvalidConfig.Error(), "sessionlimit: ") {
		t.Errorf("ErrInvalidConfig = %q, want the package prefix", ErrInvalidConfig)
	}
}
