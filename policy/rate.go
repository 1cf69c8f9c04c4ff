package policy

import (
	"strconv"
	"strings"
	"time"
)

// Rate is a sustained request rate in requests per second × 1000, the unit
// nginx's ngx_http_limit_req_module keeps internally: "3r/s" is 3000 and
// "30r/m" is 500. Keeping nginx's unit means a rate written in a policy, the
// rendered limit_req_zone directive and the server's own limiter all hold
// the same integer, with no rounding between them.
//
// The zero Rate is not a valid limit (nginx rejects "0r/s"); Validate
// reports it.
type Rate int64

// rateScale is the number of Rate units in one request per second.
const rateScale = 1000

// MaxRate is the largest Rate accepted: one million requests per second per
// key. nginx multiplies the rate by elapsed milliseconds in a machine word;
// the bound keeps that product far from overflow, and no per-client limit
// is meaningfully set above it.
const MaxRate Rate = 1_000_000 * rateScale

// ParseRate parses a rate in nginx's limit_req_zone syntax: a positive whole
// number followed by "r/s" (per second) or "r/m" (per minute), with no
// spaces, as in "3r/s" or "30r/m".
//
// nginx stores "Nr/m" as N×1000/60 and silently rounds down when that is
// not whole (it runs "1r/m" at 16/1000 r/s). ParseRate refuses such rates,
// so a policy always means exactly what nginx enforces: per-minute rates
// must be multiples of 3.
func ParseRate(s string) (Rate, error) {
	r, err := parseRate(s)
	return r, prefixed("policy: ", err)
}

// parseRate is ParseRate without the package prefix on errors.
func parseRate(s string) (Rate, error) {
	num, perMinute := "", false
	switch {
	case strings.HasSuffix(s, "r/s"):
		num = strings.TrimSuffix(s, "r/s")
	case strings.HasSuffix(s, "r/m"):
		num, perMinute = strings.TrimSuffix(s, "r/m"), true
	default:
		return 0, invalidf("rate %q is not <n>r/s or <n>r/m", s)
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, invalidf("rate %q is not <n>r/s or <n>r/m", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > int64(MaxRate/rateScale)*60 {
		return 0, invalidf("rate %q is above the maximum %s", s, MaxRate)
	}
	if n == 0 {
		return 0, invalidf("rate %q is not positive", s)
	}
	if !perMinute {
		r := Rate(n * rateScale)
		if r > MaxRate {
			return 0, invalidf("rate %q is above the maximum %s", s, MaxRate)
		}
		return r, nil
	}
	if n*rateScale%60 != 0 {
		return 0, invalidf("rate %q is not exact in nginx, which would round it down to %d/1000 r/s; use a multiple of 3r/m", s, n*rateScale/60)
	}
	r := Rate(n * rateScale / 60)
	if r > MaxRate {
		return 0, invalidf("rate %q is above the maximum %s", s, MaxRate)
	}
	return r, nil
}

// String returns the rate in nginx syntax: whole requests per second when
// the rate allows it ("3r/s"), otherwise whole requests per minute
// ("30r/m"). A rate that neither can express exactly, which Validate
// rejects, is shown in decimal requests per second ("0.016r/s") so that
// error messages can still print it.
func (r Rate) String() string {
	switch {
	case r%rateScale == 0:
		return strconv.FormatInt(int64(r/rateScale), 10) + "r/s"
	case r*60%rateScale == 0:
		return strconv.FormatInt(int64(r*60/rateScale), 10) + "r/m"
	default:
		return strconv.FormatFloat(float64(r)/rateScale, 'f', -1, 64) + "r/s"
	}
}

// exact reports whether String renders r in a syntax nginx reads back as r.
func (r Rate) exact() bool {
	return r%rateScale == 0 || r*60%rateScale == 0
}

// PerSecond returns the rate in requests per second, the unit of
// golang.org/x/time/rate.Limit.
func (r Rate) PerSecond() float64 {
	return float64(r) / rateScale
}

// Interval returns the time in which the rate earns one request back: the
// time after which a client that was refused may try again. It is
// 1s×1000/r, rounded down to the nanosecond, and 0 for a rate that is not
// positive.
func (r Rate) Interval() time.Duration {
	if r <= 0 {
		return 0
	}
	return time.Duration(int64(time.Second) * rateScale / int64(r))
}
