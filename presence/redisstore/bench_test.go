package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// BenchmarkSet measures presence updates per second through one Redis:
// each op is one script call that joins or leaves a member of a
// 1,000-member room, numbers the event and publishes it, from parallel
// writers as several instances' would be.
func BenchmarkSet(b *testing.B) {
	url := testredis.Start(b).URL()
	s := newStore(b, url, 15*time.Second)
	ctx := context.Background()
	const room = "/topic/room.bench"
	for i := range 1000 {
		if err := s.Set(ctx, room, fmt.Sprintf("player%04d", i), 1, "a short info"); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := s.Set(ctx, room, fmt.Sprintf("player%04d", (i/2)%1000), int(i%2), "a short info"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
