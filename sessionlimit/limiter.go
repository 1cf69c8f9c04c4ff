package sessionlimit

import (
	"errors"
	"math"
	"strings"
	"time"
)

// Limiter decides whether one more limited frame may pass for one session.
// Implementations are safe for concurrent use.
type Limiter interface {
	// AllowAt reports whether a frame arriving at now may pass, and if so
	// counts it. A frame that is refused is not counted.
	AllowAt(now time.Time) bool
	// AllowNAt reports whether n frames arriving together at now may all
	// pass, and if so counts all of them; otherwise it counts none. It is
	// how a transaction's SENDs are charged at COMMIT: all or nothing, so
	// that grouping frames never lets more through than the limit. n <= 0
	// always passes; n above the limit never does.
	AllowNAt(now time.Time, n int) bool
}

// Compile-time checks that every limiter satisfies Limiter.
var (
	_ Limiter = (*FixedWindow)(nil)
	_ Limiter = (*SlidingWindow)(nil)
	_ Limiter = (*TokenBucket)(nil)
)

// Algorithm names a limiting algorithm. The empty Algorithm means Fixed.
type Algorithm string

// The algorithms a Config may name. See the package documentation for how
// they differ at a window edge.
const (
	// Fixed counts frames in windows that open at the first frame after the
	// previous window expired (FixedWindow). It is the default.
	Fixed Algorithm = "fixed"
	// Sliding weighs the previous window's count into the current one
	// (SlidingWindow).
	Sliding Algorithm = "sliding"
	// Token refills a bucket of Limit tokens at Limit per Window (TokenBucket).
	Token Algorithm = "token"
)

// ParseAlgorithm returns the Algorithm named by s, ignoring case. The empty
// string parses as Fixed, the default. Any other name is an error such as
// `sessionlimit: Algorithm "x" is not one of fixed, sliding, token`.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch {
	case s == "":
		return Fixed, nil
	case strings.EqualFold(s, string(Fixed)):
		return Fixed, nil
	case strings.EqualFold(s, string(Sliding)):
		return Sliding, nil
	case strings.EqualFold(s, string(Token)):
		return Token, nil
	}
	return "", algorithmError(s)
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseAlgorithm, so
// configuration decoders reject an unknown name when they read it.
func (a *Algorithm) UnmarshalText(text []byte) error {
	v, err := ParseAlgorithm(string(text))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

func algorithmError(s string) error {
	return configErrorf("Algorithm %q is not one of fixed, sliding, token", s)
}

// Defaults applied by Config.WithDefaults to zero fields. A real user peaks
// near 1.3 frames per second, so 20 per second never touches one.
const (
	// DefaultLimit is the number of frames a session may send per Window.
	DefaultLimit = 20
	// DefaultWindow is the length of one window.
	DefaultWindow = time.Second
)

// maxWindow caps the window the limiters keep internally, so that their int64
// nanosecond arithmetic cannot overflow. It is about 36 years; a longer window
// behaves exactly like this one for any session that will ever exist.
const maxWindow = 1 << 60

// Config says how much a session may send. Its zero value is valid and means
// the fixed window, 20 frames per second.
//
// There is no setting that turns limiting off: a server that wants no
// per-session limit does not install the limiting stage at all, which costs
// nothing per frame, rather than install a limiter that always says yes.
type Config struct {
	// Algorithm selects the limiter. Empty means Fixed.
	Algorithm Algorithm
	// Limit is the number of frames allowed per Window; for Token it is also
	// the bucket's capacity. Zero means DefaultLimit (20). Negative values and
	// values above math.MaxInt32 are invalid.
	Limit int
	// Window is the period Limit applies to. Zero means DefaultWindow (1s).
	// Negative values are invalid. Windows longer than about 36 years are
	// treated as 36 years.
	Window time.Duration
}

// WithDefaults returns a copy of c with zero fields replaced by their
// defaults. It does not validate; negative values are left as they are.
func (c Config) WithDefaults() Config {
	if c.Algorithm == "" {
		c.Algorithm = Fixed
	}
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	return c
}

// Validate reports every invalid setting in c, joined with errors.Join, or
// nil. Zero values are valid since they stand for the defaults. Each error is
// an error matching ErrInvalidConfig that names the setting and value.
func (c Config) Validate() error {
	var errs []error
	switch c.Algorithm {
	case "", Fixed, Sliding, Token:
	default:
		errs = append(errs, algorithmError(string(c.Algorithm)))
	}
	if c.Limit < 0 {
		errs = append(errs, configErrorf("Limit %d is negative", c.Limit))
	} else if c.Limit > math.MaxInt32 {
		errs = append(errs, configErrorf("Limit %d exceeds 2147483647", c.Limit))
	}
	if c.Window < 0 {
		errs = append(errs, configErrorf("Window %v is negative", c.Window))
	}
	return errors.Join(errs...)
}

// New returns a fresh limiter for one session as cfg describes, after filling
// defaults and validating. A server that makes many limiters from the same
// Config should validate once with NewFactory and call Factory.New.
func New(cfg Config) (Limiter, error) {
	f, err := makeFactory(cfg)
	if err != nil {
		return nil, err
	}
	return f.New(), nil
}

// Factory makes limiters from one validated Config. Making a limiter costs a
// single small allocation and cannot fail.
//
// The zero Factory makes limiters with the default Config. A Factory is
// immutable and safe for concurrent use.
type Factory struct {
	alg      Algorithm
	limit    int32
	window   int64 // nanoseconds, capped at maxWindow
	interval int64 // Token only: nanoseconds per token
}

// NewFactory validates cfg once and returns a Factory for it.
func NewFactory(cfg Config) (*Factory, error) {
	f, err := makeFactory(cfg)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func makeFactory(cfg Config) (Factory, error) {
	if err := cfg.Validate(); err != nil {
		return Factory{}, err
	}
	cfg = cfg.WithDefaults()
	window := min(int64(cfg.Window), maxWindow)
	limit := int32(cfg.Limit)
	return Factory{
		alg:      cfg.Algorithm,
		limit:    limit,
		window:   window,
		interval: tokenInterval(limit, window),
	}, nil
}

// Config returns the Config f was made from, with defaults filled in and the
// Window capped as Config.Window describes.
func (f *Factory) Config() Config {
	return Config{
		Algorithm: f.alg,
		Limit:     int(f.limit),
		Window:    time.Duration(f.window),
	}.WithDefaults()
}

// New returns a fresh limiter for one session.
func (f *Factory) New() Limiter {
	switch f.alg {
	case Sliding:
		return &SlidingWindow{limit: f.limit, window: f.window}
	case Token:
		return &TokenBucket{interval: f.interval, span: int64(f.limit) * f.interval}
	default:
		// The zero Factory leaves the fields zero, and a zero FixedWindow
		// takes the defaults on its first frame.
		return &FixedWindow{limit: f.limit, window: f.window}
	}
}

// normalize turns the arguments of the NewFixedWindow style constructors into
// internal settings: zero or negative values take the defaults, a limit above
// math.MaxInt32 is capped, and the window is capped at maxWindow.
func normalize(limit int, window time.Duration) (int32, int64) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if window <= 0 {
		window = DefaultWindow
	}
	return int32(min(limit, math.MaxInt32)), min(int64(window), maxWindow)
}

// clockBase anchors the int64 clock the limiters keep. Reading times relative
// to an instant taken with the monotonic clock keeps limiting immune to wall
// clock steps when callers pass time.Now().
var clockBase = time.Now()

// clockOffset shifts the int64 clock so that every instant within about 146
// years of clockBase, before or after, reads as a positive number. A limiter's
// zero state (window start or bucket time 0) therefore reads as long ago: an
// expired window, a full bucket. It needs no separate "unused" flag.
const clockOffset = 1 << 62

// nanos converts now to the limiters' int64 clock.
func nanos(now time.Time) int64 {
	d := int64(now.Sub(clockBase))
	// Sub saturates at about ±292 years; keep far-future instants from
	// wrapping around when the offset is added.
	if d > clockOffset-1 {
		d = clockOffset - 1
	}
	return d + clockOffset
}
