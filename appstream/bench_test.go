package appstream

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
)

// BenchmarkHandleApp measures the app stream's append path to a real
// redis-server on loopback: 100-byte bodies with one header, from
// GOMAXPROCS*16 concurrent senders (each a session's reader goroutine
// waiting for its RECEIPT), while a consumer group reads and acknowledges
// everything so that each append also releases. Its peer is the plain
// XADD MAXLEN ~ the stream was bounded with before, in entries only. It
// reports msgs/s and the p99 append latency.
func BenchmarkHandleApp(b *testing.B) {
	rs := testredis.Start(b)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr, PoolSize: 64})
	defer c.Close()
	h, err := New(Config{Client: c, Instance: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	m := server.AppMessage{ID: "1", Destination: "/app/move", Principal: "alice", Session: "s",
		Headers: []stompframe.Header{{Name: "room", Value: "7"}}, Body: []byte(strings.Repeat("x", 100))}
	ctx := context.Background()
	if err := c.XGroupCreateMkStream(ctx, DefaultStream, "backend", "$").Err(); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var consumer sync.WaitGroup
	consumer.Add(1)
	go func() {
		defer consumer.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "w", Streams: []string{DefaultStream, ">"}, Count: 500, Block: 10 * time.Millisecond}).Result()
			if err != nil || len(res) == 0 {
				continue
			}
			ids := make([]string, 0, len(res[0].Messages))
			for _, e := range res[0].Messages {
				ids = append(ids, e.ID)
			}
			c.XAck(ctx, DefaultStream, "backend", ids...)
		}
	}()
	defer func() { close(stop); consumer.Wait() }()
	b.Run("script", func(b *testing.B) {
		benchAppend(b, func() error { return h.HandleApp(ctx, m) })
	})
	b.Run("xadd-maxlen", func(b *testing.B) {
		args := &redis.XAddArgs{Stream: "peer", MaxLen: DefaultMaxLen, Approx: true, ID: "*", Values: h.fields(m)}
		benchAppend(b, func() error { return c.XAdd(ctx, args).Err() })
	})
}

func benchAppend(b *testing.B, add func() error) {
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if err := add(); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
