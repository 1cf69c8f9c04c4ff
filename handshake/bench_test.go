package handshake

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-redis/redis_rate/v10"
	"golang.org/x/time/rate"

	"github.com/stompgate/stompgate/internal/testredis"
)

// benchKeys are client addresses cycled through by the benchmarks.
var benchKeys = func() []string {
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "10." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ".1"
	}
	return keys
}()

func BenchmarkDecide(b *testing.B) {
	b.ReportAllocs()
	var st bucket
	fresh := true
	now := t0.UnixMilli()
	for b.Loop() {
		now++
		_, st, _ = decide(st, fresh, now, 3000, 5)
		fresh = false
	}
}

func BenchmarkMemoryStore(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s, err := NewMemoryStore(MemoryConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := s.AllowAt(t0.Add(time.Duration(i)*time.Millisecond), benchKeys[i%len(benchKeys)], handshakeLimit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		s, err := NewMemoryStore(MemoryConfig{})
		if err != nil {
			b.Fatal(err)
		}
		var worker atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(worker.Add(1)) * 997
			for pb.Next() {
				i++
				if _, err := s.AllowAt(t0.Add(time.Duration(i)*time.Millisecond), benchKeys[i%len(benchKeys)], handshakeLimit); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkXTimeRate is the reference for the MemoryStore: one decision of
// golang.org/x/time/rate's token bucket, on a single limiter (no key lookup,
// no eviction).
func BenchmarkXTimeRate(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		l := rate.NewLimiter(3, 6)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			l.AllowN(t0.Add(time.Duration(i)*time.Millisecond), 1)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := rate.NewLimiter(3, 6)
		var worker atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(worker.Add(1)) * 997
			for pb.Next() {
				i++
				l.AllowN(t0.Add(time.Duration(i)*time.Millisecond), 1)
			}
		})
	})
}

// benchCallers is the number of concurrent callers of the Redis
// benchmarks: a burst of handshakes arriving at one instance.
const benchCallers = 50

// runRedisBench runs decide from benchCallers goroutines and reports
// decisions/s and the latency percentiles of one decision.
func runRedisBench(b *testing.B, decide func(ctx context.Context, key string) error) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchCallers + procs - 1) / procs)
	var (
		mu     sync.Mutex
		merged = hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		worker atomic.Int64
	)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		h := hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
		ctx := context.Background()
		i := int(worker.Add(1)) * 997
		for pb.Next() {
			i++
			start := time.Now()
			if err := decide(ctx, benchKeys[i%len(benchKeys)]); err != nil {
				b.Error(err)
				return
			}
			_ = h.RecordValue(time.Since(start).Microseconds())
		}
		mu.Lock()
		merged.Merge(h)
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(merged.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(float64(merged.ValueAtQuantile(99)), "p99-µs")
}

// BenchmarkRedis compares the RedisStore (nginx leaky bucket, one Lua
// script with the ban check) with github.com/go-redis/redis_rate (GCRA, one
// Lua script) on the same redis-server in the same run, 50 callers each.
func BenchmarkRedis(b *testing.B) {
	srv := testredis.Start(b)
	client := newTestClient(b, srv.URL())
	b.Run("RedisStore", func(b *testing.B) {
		s, err := NewRedisStore(RedisConfig{Client: client, Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		runRedisBench(b, func(ctx context.Context, key string) error {
			_, err := s.Allow(ctx, key, handshakeLimit)
			return err
		})
	})
	b.Run("redis_rate", func(b *testing.B) {
		l := redis_rate.NewLimiter(client)
		lim := redis_rate.Limit{Rate: 3, Burst: 6, Period: time.Second}
		runRedisBench(b, func(ctx context.Context, key string) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := l.Allow(ctx, key, lim)
			return err
		})
	})
}
