package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// BenchmarkPublish compares, through one Redis in one run, history
// publishes (append.lua: offset, XADD, PUBLISH, pipelined by the
// Publisher) with plain PUBLISH pipelined the way the relay sends them,
// each with a 100-byte payload. msgs/s is the figure to compare.
func BenchmarkPublish(b *testing.B) {
	rs := testredis.Start(b)
	payload := make([]byte, 100)
	for _, dests := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("history/dests=%d", dests), func(b *testing.B) {
			s := newTestRedisStore(b, rs.URL(), RedisConfig{
				Channel: func(dest string) string { return "stompgate:topic:{" + dest + "}" },
			})
			names := make([]string, dests)
			for i := range names {
				names[i] = fmt.Sprintf("/topic/bench.%d.%d", b.N, i)
			}
			p, err := s.NewPublisher(PublisherConfig{QueueSize: 1 << 16, QueueBytes: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := time.Now()
			for i := range b.N {
				for !p.Publish(names[i%dests], payload, Retention{}) {
					time.Sleep(50 * time.Microsecond) // queue full: let it drain
				}
			}
			p.Close()
			el := time.Since(start)
			st := p.Stats()
			if st.Published != uint64(b.N) {
				b.Fatalf("published %d of %d (%+v)", st.Published, b.N, st)
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
			b.ReportMetric(float64(st.Pipelines), "pipelines")
		})
	}
	b.Run("plain-publish", func(b *testing.B) {
		c := newTestClient(b, rs.URL())
		ctx := context.Background()
		pipe := c.Pipeline()
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; {
			n := min(DefaultBatchSize, b.N-i)
			for j := range n {
				pipe.Publish(ctx, fmt.Sprintf("stompgate:topic:{/topic/bench.%d}", (i+j)%64), payload)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			i += n
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
}
