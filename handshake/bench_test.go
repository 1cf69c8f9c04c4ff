package handshake

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
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
// decisions/s and the latency percentiles of one decision. It returns
// decisions/s.
func runRedisBench(b *testing.B, decide func(ctx context.Context, key string) error) float64 {
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
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "decisions/s")
	b.ReportMetric(float64(merged.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(float64(merged.ValueAtQuantile(99)), "p99-µs")
	return rate
}

// BenchmarkRedis compares, on one redis-server in one run, 50 callers
// each: the RedisStore as configured by default (decisions coalesced into
// pipelines), the RedisStore with coalescing off (one EVALSHA round trip
// per decision, as before pipelining), github.com/go-redis/redis_rate (GCRA,
// one Lua script per decision) and redis-benchmark sending EVALSHA of the
// RedisStore's own script for random keys from 50 connections (what Redis
// itself answers, one round trip per decision, with no Go client). The
// ratios of the last runs are logged at the end.
func BenchmarkRedis(b *testing.B) {
	srv := testredis.Start(b)
	client := newTestClient(b, srv.URL())
	rates := map[string]float64{}
	store := func(cfg RedisConfig) func(b *testing.B) {
		return func(b *testing.B) {
			cfg.Client, cfg.Timeout = client, time.Second
			s, err := NewRedisStore(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rates[b.Name()] = runRedisBench(b, func(ctx context.Context, key string) error {
				_, err := s.Allow(ctx, key, handshakeLimit)
				return err
			})
			if st := s.PipelineStats(); st.Batches > 0 {
				b.ReportMetric(float64(st.Decisions)/float64(st.Batches), "decisions/batch")
			}
		}
	}
	b.Run("RedisStore", store(RedisConfig{}))
	b.Run("RedisStoreUnpipelined", store(RedisConfig{MaxBatch: -1}))
	b.Run("redis_rate", func(b *testing.B) {
		l := redis_rate.NewLimiter(client)
		lim := redis_rate.Limit{Rate: 3, Burst: 6, Period: time.Second}
		rates[b.Name()] = runRedisBench(b, func(ctx context.Context, key string) error {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err := l.Allow(ctx, key, lim)
			return err
		})
	})
	b.Run("redis-benchmark_EVALSHA", func(b *testing.B) {
		rates[b.Name()] = redisBenchmarkEvalSha(b, client, srv.Addr)
	})
	base := rates["BenchmarkRedis/redis_rate"]
	for _, name := range []string{"RedisStore", "RedisStoreUnpipelined", "redis-benchmark_EVALSHA"} {
		if r := rates["BenchmarkRedis/"+name]; r > 0 && base > 0 {
			b.Logf("%s: %.0f decisions/s, %.2fx redis_rate, %.2fx redis-benchmark EVALSHA",
				name, r, r/base, r/rates["BenchmarkRedis/redis-benchmark_EVALSHA"])
		}
	}
}

// redisBenchmarkEvalSha runs redis-benchmark against addr: b.N EVALSHA
// calls of the decision script (one decision each) from benchCallers
// connections, keys drawn from 100,000 random addresses. It reports
// redis-benchmark's own requests/s and p99 and returns the requests/s.
func redisBenchmarkEvalSha(b *testing.B, client redis.UniversalClient, addr string) float64 {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		b.Fatal("redis-benchmark not found in PATH: install redis-tools (the project's test command does)")
	}
	if err := limitScript.Load(b.Context(), client).Err(); err != nil {
		b.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(bin, "-h", host, "-p", port, "-c", strconv.Itoa(benchCallers),
		"-n", strconv.Itoa(max(b.N, benchCallers)), "-r", "100000", "--csv",
		"EVALSHA", limitScript.Hash(), "2",
		DefaultPrefix+"hs:{__rand_int__}:"+handshakeLimit.Name, DefaultPrefix+"ban:{__rand_int__}",
		strconv.FormatInt(handshakeLimit.Rate, 10), strconv.Itoa(handshakeLimit.Burst)).Output()
	if err != nil {
		b.Fatalf("redis-benchmark: %v", err)
	}
	// The CSV is a header and one row:
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 || len(rows[1]) != 8 {
		b.Fatalf("redis-benchmark printed %q, want a header and one row of 8 fields", out)
	}
	rps, err1 := strconv.ParseFloat(rows[1][1], 64)
	p50, err2 := strconv.ParseFloat(rows[1][4], 64)
	p99, err3 := strconv.ParseFloat(rows[1][6], 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		b.Fatalf("redis-benchmark row %q: %v", rows[1], err)
	}
	b.ReportMetric(rps, "decisions/s")
	b.ReportMetric(p50*1000, "p50-µs")
	b.ReportMetric(p99*1000, "p99-µs")
	return rps
}

// BenchmarkRedisCluster is BenchmarkRedis on a Redis Cluster of three
// masters, 50 callers each: there a script may only touch one slot, so
// the RedisStore sends one EVALSHA per decision and go-redis splits each
// pipeline into one per master.
func BenchmarkRedisCluster(b *testing.B) {
	cl := testredis.StartCluster(b)
	client := newTestClient(b, cl.URL())
	store := func(cfg RedisConfig) func(b *testing.B) {
		return func(b *testing.B) {
			cfg.Client, cfg.Timeout = client, time.Second
			s, err := NewRedisStore(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			runRedisBench(b, func(ctx context.Context, key string) error {
				_, err := s.Allow(ctx, key, handshakeLimit)
				return err
			})
			if st := s.PipelineStats(); st.Batches > 0 {
				b.ReportMetric(float64(st.Decisions)/float64(st.Batches), "decisions/batch")
			}
		}
	}
	b.Run("RedisStore", store(RedisConfig{}))
	b.Run("RedisStoreUnpipelined", store(RedisConfig{MaxBatch: -1}))
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
