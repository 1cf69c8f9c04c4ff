package relay

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/stompframe"
)

// benchObserver counts with atomics, so that the benchmark loop can pace
// itself on the relay's progress.
type benchObserver struct {
	out, in, dropped atomic.Int64
}

func (o *benchObserver) RelayMessages(dir string, n int) {
	if dir == DirectionOut {
		o.out.Add(int64(n))
	} else {
		o.in.Add(int64(n))
	}
}
func (o *benchObserver) RelayDropped(_ string, n int)  { o.dropped.Add(int64(n)) }
func (o *benchObserver) RelayOutage(bool)              {}
func (o *benchObserver) RelaySubscriptions(int)        {}
func (o *benchObserver) RelaySubscriptionsDown(int)    {}
func (o *benchObserver) RelayResubscribes(string, int) {}
func (o *benchObserver) Delivered(string, int)         {}

// countingSubscriber is a broker subscriber that only counts.
type countingSubscriber struct{ n atomic.Int64 }

func (s *countingSubscriber) Deliver(*broker.Subscription, *broker.Message, *broker.Batch) bool {
	s.n.Add(1)
	return true
}

// benchMessage is a typical chat message: a 64-byte JSON body and one
// user header.
func benchMessage(b *broker.Broker) *broker.Message {
	body := []byte(`{"room":"r1","from":"alice","text":"hello, everyone in the room"}`)
	return broker.NewMessageParts(b.NextID(), "/topic/room.1",
		[]stompframe.Header{{Name: "content-type", Value: "application/json"}}, body)
}

// startBenchRelay starts a relay with its broker on the Redis at addr.
func startBenchRelay(b *testing.B, addr string) (*Relay, *broker.Broker, *benchObserver) {
	b.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	obs := &benchObserver{}
	r, err := New(Config{Client: client, Observer: obs})
	if err != nil {
		b.Fatal(err)
	}
	br := broker.NewWithConfig(broker.Config{Hooks: r})
	if err := r.Start(br); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = r.Close()
		_ = client.Close()
	})
	return r, br, obs
}

// publishPaced publishes m n times, keeping at most half the queue in
// flight so that the benchmark measures the relay, not its drop path.
func publishPaced(r *Relay, obs *benchObserver, m *broker.Message, n int, done func() int64) {
	limit := int64(r.cfg.QueueSize / 2)
	for i := int64(0); i < int64(n); i++ {
		for i-obs.out.Load()-obs.dropped.Load() >= limit {
			runtime.Gosched()
		}
		r.Publish(m)
	}
	for done() < int64(n) {
		time.Sleep(50 * time.Microsecond)
	}
}

// rpsRE reads redis-benchmark -q output: "PUBLISH: 98231.83 requests per
// second, p50=0.255 msec" (or "PUBLISH channel xyz: ..." for an explicit
// command).
var rpsRE = regexp.MustCompile(`PUBLISH[^:\r\n]*: ([0-9.]+) requests per second`)

// redisBenchmarkPublish runs the peer, `redis-benchmark -t publish`, on the
// same Redis and returns its requests per second: the ceiling for PUBLISH
// on this machine (50 connections, one command in flight on each).
// redis-benchmark before 7.2 has no publish test and prints nothing for
// it; the same command is then given explicitly (PUBLISH to one channel
// with a 3-byte payload, which is what -t publish sends).
func redisBenchmarkPublish(b *testing.B, port string) float64 {
	b.Helper()
	for _, args := range [][]string{
		{"-p", port, "-t", "publish", "-n", "200000", "-q"},
		{"-p", port, "-n", "200000", "-q", "PUBLISH", "channel", "xxx"},
	} {
		out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
		if err != nil {
			b.Fatalf("redis-benchmark %q (Debian package redis-tools): %v\n%s", args, err, out)
		}
		if m := rpsRE.FindSubmatch(out); m != nil {
			rps, err := strconv.ParseFloat(string(m[1]), 64)
			if err != nil {
				b.Fatal(err)
			}
			return rps
		}
	}
	b.Fatal("redis-benchmark printed no PUBLISH rate")
	return 0
}

// BenchmarkRelayPublish measures the publishing side: messages handed to
// Publish until Redis acknowledged them, batched into pipelines. It
// reports msgs/s, the rate redis-benchmark reaches with PUBLISH on the
// same Redis (redis-benchmark-rps), and their ratio.
func BenchmarkRelayPublish(b *testing.B) {
	rs := testredis.Start(b)
	r, br, obs := startBenchRelay(b, rs.Addr)
	m := benchMessage(br)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	publishPaced(r, obs, m, b.N, func() int64 { return obs.out.Load() + obs.dropped.Load() })
	elapsed := time.Since(start)
	b.StopTimer()
	if d := obs.dropped.Load(); d != 0 {
		b.Fatalf("%d messages dropped", d)
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "msgs/s")
	if b.N >= 10000 {
		_, port, _ := splitAddr(rs.Addr)
		ceiling := redisBenchmarkPublish(b, port)
		b.ReportMetric(ceiling, "redis-benchmark-rps")
		b.ReportMetric(rate/ceiling, "ratio")
	}
}

// BenchmarkRelayEndToEnd measures a message's whole way between two
// instances: Publish on one relay, PUBLISH, the other relay's
// subscription, decoding and Broker.Publish to a local subscriber.
func BenchmarkRelayEndToEnd(b *testing.B) {
	rs := testredis.Start(b)
	pub, pubBroker, pubObs := startBenchRelay(b, rs.Addr)
	sub, subBroker, _ := startBenchRelay(b, rs.Addr)
	counter := &countingSubscriber{}
	s := broker.NewSubscription("0", "/topic/room.1", broker.AckAuto, stompframe.V12, counter)
	subBroker.Subscribe(s)
	b.Cleanup(func() { subBroker.Unsubscribe(s) })
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	b.Cleanup(func() { _ = rdb.Close() })
	poll.Until(b, clientTimeout, func() error {
		n, err := rdb.PubSubNumSub(context.Background(), sub.Channel("/topic/room.1")).Result()
		if err != nil || n[sub.Channel("/topic/room.1")] != 1 {
			return errNotYet
		}
		return nil
	})
	m := benchMessage(pubBroker)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	publishPaced(pub, pubObs, m, b.N, func() int64 { return counter.n.Load() + pubObs.dropped.Load() })
	elapsed := time.Since(start)
	b.StopTimer()
	if d := pubObs.dropped.Load(); d != 0 {
		b.Fatalf("%d messages dropped", d)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
}

// errNotYet is waitFor's answer while a condition does not hold yet.
var errNotYet = errorString("not yet")

type errorString string

func (e errorString) Error() string { return string(e) }

func splitAddr(addr string) (host, port string, err error) {
	return net.SplitHostPort(addr)
}

// BenchmarkCodec encodes and decodes a typical chat message, and one at
// 16 KiB, unsigned and signed: the cost of Config.Key is the two HMACs
// (one at the publisher, one at each receiver) over the payload.
func BenchmarkCodec(b *testing.B) {
	key, err := NewSigner("0123456789abcdef0123456789abcdef", 0)
	if err != nil {
		b.Fatal(err)
	}
	br := broker.New()
	now := time.Now()
	for _, size := range []int{0, 16 << 10} {
		m := benchMessage(br)
		if size > 0 {
			m = broker.NewMessageParts(br.NextID(), m.Destination, m.Headers(), make([]byte, size))
		}
		for _, s := range []struct {
			name string
			s    *Signer
		}{{"unsigned", nil}, {"signed", key}} {
			name := s.name + "/body=" + strconv.Itoa(len(m.Body()))
			b.Run("encode/"+name, func(b *testing.B) {
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					buf = appendMessage(buf[:0], s.s, now, "instance01", m)
				}
				b.SetBytes(int64(len(buf)))
			})
			p := string(appendMessage(nil, s.s, now, "instance01", m))
			b.Run("decode/"+name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					if _, reason := decodeMessage(p, "other", s.s, now); reason != "" {
						b.Fatal(reason)
					}
				}
			})
		}
	}
}
