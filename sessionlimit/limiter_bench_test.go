package sessionlimit

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The benchmarks compare each algorithm with golang.org/x/time/rate's
// Limiter, the reference, in the same run. The limit is set high enough that
// every frame passes, the common case for a real user, so each call does its
// full bookkeeping. All limiters are called through an interface, as a server
// holding a Limiter calls them.

const (
	benchLimit    = 1 << 30
	benchWindow   = time.Second
	benchSessions = 10_000
)

// benchLimiter is what the benchmarks call: AllowAt with a precomputed
// instant, and Allow, which reads the clock itself.
type benchLimiter interface {
	AllowAt(now time.Time) bool
	Allow() bool
}

// xrate adapts the reference to benchLimiter.
type xrate struct{ l *rate.Limiter }

func (x xrate) AllowAt(now time.Time) bool { return x.l.AllowN(now, 1) }
func (x xrate) Allow() bool                { return x.l.Allow() }

var benchKinds = []struct {
	name string
	make func() benchLimiter
}{
	{"fixed", func() benchLimiter { return NewFixedWindow(benchLimit, benchWindow) }},
	{"sliding", func() benchLimiter { return NewSlidingWindow(benchLimit, benchWindow) }},
	{"token", func() benchLimiter { return NewTokenBucket(benchLimit, benchWindow) }},
	{"x-time-rate", func() benchLimiter {
		return xrate{rate.NewLimiter(rate.Limit(benchLimit)/rate.Limit(benchWindow.Seconds()), benchLimit)}
	}},
}

// benchTimes are precomputed instants 1µs apart, cycled through so that time
// moves on between calls without the cost of reading the clock.
var benchTimes = func() []time.Time {
	ts := make([]time.Time, 1024)
	now := time.Now()
	for i := range ts {
		ts[i] = now.Add(time.Duration(i) * time.Microsecond)
	}
	return ts
}()

func BenchmarkAllowAt(b *testing.B) {
	for _, k := range benchKinds {
		b.Run("serial/"+k.name, func(b *testing.B) {
			l := k.make()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				l.AllowAt(benchTimes[i&1023])
				i++
			}
		})
	}
	for _, k := range benchKinds {
		b.Run("sessions-10000/"+k.name, func(b *testing.B) {
			ls := makeSessions(k.make)
			var next atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1)*7919) % benchSessions
				t := 0
				for pb.Next() {
					ls[i].AllowAt(benchTimes[t&1023])
					t++
					if i++; i == benchSessions {
						i = 0
					}
				}
			})
		})
	}
	for _, k := range benchKinds {
		b.Run("one-session/"+k.name, func(b *testing.B) {
			l := k.make()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				t := 0
				for pb.Next() {
					l.AllowAt(benchTimes[t&1023])
					t++
				}
			})
		})
	}
}

func BenchmarkAllow(b *testing.B) {
	for _, k := range benchKinds {
		b.Run("serial/"+k.name, func(b *testing.B) {
			l := k.make()
			b.ReportAllocs()
			for b.Loop() {
				l.Allow()
			}
		})
	}
	for _, k := range benchKinds {
		b.Run("sessions-10000/"+k.name, func(b *testing.B) {
			ls := makeSessions(k.make)
			var next atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1)*7919) % benchSessions
				for pb.Next() {
					ls[i].Allow()
					if i++; i == benchSessions {
						i = 0
					}
				}
			})
		})
	}
	for _, k := range benchKinds {
		b.Run("one-session/"+k.name, func(b *testing.B) {
			l := k.make()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Allow()
				}
			})
		})
	}
}

// BenchmarkNew measures the per-session cost of making a limiter.
func BenchmarkNew(b *testing.B) {
	for _, alg := range []Algorithm{Fixed, Sliding, Token} {
		b.Run("factory/"+string(alg), func(b *testing.B) {
			f, err := NewFactory(Config{Algorithm: alg})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				sinkLimiter = f.New()
			}
		})
	}
	b.Run("config/fixed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkLimiter, _ = New(Config{})
		}
	})
	b.Run("x-time-rate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkRate = rate.NewLimiter(20, 20)
		}
	})
}

// sinkRate keeps made reference limiters from being optimized away.
var sinkRate *rate.Limiter

// makeSessions makes one limiter per session.
func makeSessions(newLimiter func() benchLimiter) []benchLimiter {
	ls := make([]benchLimiter, benchSessions)
	for i := range ls {
		ls[i] = newLimiter()
	}
	return ls
}
