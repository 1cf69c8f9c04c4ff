package principallimit

import (
	"fmt"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// BenchmarkAbuserFlood floods one Redis with 100 abusive principals, each
// publishing 200 SENDs/s (ten sessions at the per-session limit of 20/s)
// against the default limit of 60/s, through two limiters side by side:
// one without the pre-check (every frame is a round trip, as a limiter
// that always asks Redis would make) and one with it. One op is one frame
// through each; time is simulated (the script takes the benchmark's
// clock), so the rates are per second of the flood, not of the machine.
//
// Reported: Redis round trips per second before and after, their ratio,
// and the share of the abusers' excess (the frames dropped) that reached
// Redis before being dropped. Run it with enough frames for several
// windows:
//
//	go test -run '^$' -bench AbuserFlood -benchtime 40000x ./principallimit
func BenchmarkAbuserFlood(b *testing.B) {
	srv := testredis.Start(b)
	const (
		abusers = 100
		rate    = 200 // SENDs per second per abuser
		gap     = time.Second / (abusers * rate)
	)
	c := newClock()
	modes := [2]struct {
		name string
		l    *Limiter
		obs  *countingObserver
	}{{name: "before"}, {name: "after"}}
	for i := range modes {
		s := newTestRedisStore(b, srv.URL(), c)
		s.prefix = fmt.Sprintf("bench%d:", i)
		modes[i].obs = newCountingObserver()
		modes[i].l = newTestLimiter(b, Config{Redis: s, Observer: modes[i].obs})
	}
	modes[0].l.precheck = false
	names := make([]string, abusers)
	for i := range names {
		names[i] = fmt.Sprint("abuser-", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := t0.Add(time.Duration(i) * gap)
		c.set(now)
		for _, m := range modes {
			m.l.AllowAt(now, names[i%abusers], 1, m.l.Global())
		}
	}
	b.StopTimer()
	seconds := (time.Duration(b.N) * gap).Seconds()
	var trips [2]float64
	for i, m := range modes {
		trips[i] = float64(m.obs.roundTrips()) / seconds
		dropped := m.obs.decisions[Decision{Source: SourceLocal}] + m.obs.decisions[Decision{Source: SourceRedis}] + m.obs.decisions[Decision{Source: SourceMemory}]
		if dropped > 0 {
			b.ReportMetric(100*float64(m.obs.decisions[Decision{Source: SourceRedis}])/float64(dropped), "%excess-in-redis-"+m.name)
		}
		b.ReportMetric(trips[i], "trips/s-"+m.name)
	}
	if trips[1] > 0 {
		b.ReportMetric(trips[0]/trips[1], "ratio")
	}
}

// BenchmarkPreCheckDrop is the cost of a frame the pre-check drops: a
// principal Redis has said is over, from many goroutines at once.
func BenchmarkPreCheckDrop(b *testing.B) {
	srv := testredis.Start(b)
	l := newTestLimiter(b, Config{Limit: 1, Window: time.Hour, Redis: newTestRedisStore(b, srv.URL(), nil)})
	now := time.Now()
	for range 2 {
		l.AllowAt(now, "mallory", 1, l.Global())
	}
	if d := l.AllowAt(now, "mallory", 1, l.Global()); d != (Decision{Source: SourceLocal}) {
		b.Fatalf("setup: %+v, want dropped locally", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.AllowAt(now, "mallory", 1, l.Global())
		}
	})
}
