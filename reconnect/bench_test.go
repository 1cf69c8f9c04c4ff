package reconnect

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// benchKeys is how many addresses the benchmarks spread their CONNECTs
// over: a busy instance's distinct clients in a minute.
const benchKeys = 4096

func benchNames() []string {
	names := make([]string, benchKeys)
	for i := range names {
		names[i] = "10.1." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
	}
	return names
}

// BenchmarkMemoryCount is one count in process memory (no Redis).
func BenchmarkMemoryCount(b *testing.B) {
	c := newTestCounter(b, Config{})
	names := benchNames()
	ctx := context.Background()
	now := time.Now()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_, _ = c.Count(ctx, ScopeAddress, names[i%benchKeys], now)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var next atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = c.Count(ctx, ScopeAddress, names[next.Add(1)%benchKeys], now)
			}
		})
	})
}

// BenchmarkRedisCount is one count in Redis (with the memory count
// beside it), one round trip on loopback.
func BenchmarkRedisCount(b *testing.B) {
	rs := testredis.Start(b)
	store, _ := newTestRedisStore(b, rs.URL())
	c := newTestCounter(b, Config{Redis: store})
	names := benchNames()
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := c.Count(ctx, ScopeAddress, names[i%benchKeys], time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var next atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Count(ctx, ScopeAddress, names[next.Add(1)%benchKeys], time.Now()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
