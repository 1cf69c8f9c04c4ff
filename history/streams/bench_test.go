package streams

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/history"
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
			s := newTestStore(b, rs.URL(), Config{
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
				for !p.Publish(names[i%dests], payload, history.Retention{}) {
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

// BenchmarkRecoveryHerd has 1,000 subscriptions recover the same 100
// missed messages of one destination at once, through one Redis: each
// asks the history.Reader (coalesced) or the store itself (alone, the peer),
// splices the result and counts as caught up when the 100 are emitted.
// It reports the p50 and p99 time from subscribing to caught up (of the
// recoveries that succeeded), the Redis reads per herd and the
// recoveries that failed (a read that timed out) per herd.
func BenchmarkRecoveryHerd(b *testing.B) {
	rs := testredis.Start(b)
	s := newTestStore(b, rs.URL(), Config{})
	const dest, clients, missed = "/topic/room.herd", 1000, 100
	var last history.Position
	for range 1000 {
		last = mustAppend(b, s, dest, history.Retention{}, string(make([]byte, 100)))
	}
	start := history.Start{Kind: history.StartAt, Offset: last.Offset - missed + 1, Epoch: last.Epoch}
	for _, v := range []struct {
		name     string
		interval time.Duration // 0: alone, no history.Reader
	}{{"reader/interval=100ms", history.DefaultInterval}, {"reader/interval=20ms", 20 * time.Millisecond}, {"alone", 0}} {
		coalesced := v.interval > 0
		b.Run(v.name, func(b *testing.B) {
			rd, err := history.NewReader(history.ReaderConfig{Store: s, Interval: max(v.interval, time.Millisecond)})
			if err != nil {
				b.Fatal(err)
			}
			defer rd.Close()
			reads0 := s.Stats().Reads
			var lat []time.Duration
			var mu sync.Mutex
			var failed atomic.Int64
			b.ResetTimer()
			for range b.N {
				// Herds come after a quiet spell, not back to back:
				// the previous herd's read does not delay this one.
				b.StopTimer()
				time.Sleep(2 * history.DefaultInterval)
				b.StartTimer()
				var wg sync.WaitGroup
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						subscribed := time.Now()
						var res history.Result
						var err error
						if coalesced {
							res, err = rd.Since(context.Background(), dest, history.Retention{}, start, subscribed)
						} else {
							var snap history.Snapshot
							snap, err = s.Tail(context.Background(), dest, history.DefaultMaxRecovery, history.Retention{})
							res = history.Since(snap, start, history.DefaultMaxRecovery)
						}
						st := history.NewRecovery(0, 0).Apply(res)
						if err != nil || !st.Recovered || len(st.Emit) != missed {
							failed.Add(1)
							return
						}
						d := time.Since(subscribed)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			b.StopTimer()
			if coalesced && failed.Load() > 0 {
				b.Errorf("%d recoveries through the history.Reader failed", failed.Load())
			}
			slices.Sort(lat)
			if len(lat) == 0 {
				lat = []time.Duration{0}
			}
			b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/herd")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(s.Stats().Reads-reads0)/float64(b.N), "reads/herd")
		})
	}
}
