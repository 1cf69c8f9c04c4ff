package presence

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkChurn measures what a 1,000-member room under churn costs its
// watchers: each op is one member leaving or joining again, fanned out
// to every watcher. "each" sends a frame per event (no batching);
// "batch100" gathers 100 events per frame, as a busy room's 250 ms batch
// does. bytes/watcher/event is what one watcher is sent per event,
// ns/watcher/event the CPU of the fan-out per watcher.
func BenchmarkChurn(b *testing.B) {
	const members, watchers = 1000, 100
	for _, bc := range []struct {
		name  string
		batch int
	}{{"each", 1}, {"batch100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			store := NewMemoryStore()
			tr := New(Config{Store: store, Enabled: func(string) bool { return true }, Batch: time.Hour})
			defer tr.Close()
			ctx := context.Background()
			const room = "/topic/room.bench"
			for i := range members {
				_ = store.Set(ctx, room, fmt.Sprintf("player%04d", i), 1, "a short info")
			}
			var sent atomic.Int64
			for range watchers {
				stop, err := tr.Watch(room, func(body []byte) bool { sent.Add(int64(len(body))); return true })
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
			}
			d := tr.dests[room]
			sent.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := fmt.Sprintf("player%04d", (i/2)%members)
				_ = store.Set(ctx, room, p, i%2, "a short info") // leave, then join again
				if (i+1)%bc.batch == 0 {
					tr.flush(d)
				}
			}
			tr.flush(d)
			b.StopTimer()
			b.ReportMetric(float64(sent.Load())/float64(b.N)/watchers, "bytes/watcher/event")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/watchers, "ns/watcher/event")
		})
	}
}
