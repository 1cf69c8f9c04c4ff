package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/server"
)

// clientTimeout bounds every client step; reaching it means a step is
// stuck.
const clientTimeout = 10 * time.Second

// instance is one server instance as a deployment runs it: its own Redis
// client, broker, relay and STOMP server on a loopback port.
type instance struct {
	name   string
	relay  *Relay
	broker *broker.Broker
	url    string
	obs    *countingObserver
	logs   *logRecorder
	client redis.UniversalClient
}

// startInstance starts an instance on the Redis at addr. Everything is
// stopped when the test ends: sessions first, then the relay, then the
// Redis client.
// startPair starts a redis-server and two instances, a and b, on it,
// with a client of that Redis for the test's own commands.
func startPair(t *testing.T) (*testredis.Server, *instance, *instance, *redis.Client) {
	t.Helper()
	rs := testredis.Start(t)
	a := startInstance(t, "a", rs.Addr)
	b := startInstance(t, "b", rs.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rs, a, b, rdb
}

func startInstance(t *testing.T, name, addr string) *instance {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	return startInstanceClient(t, name, client)
}

func startInstanceClient(t *testing.T, name string, client redis.UniversalClient) *instance {
	t.Helper()
	return startInstanceConfig(t, name, client, Config{})
}

// startInstanceConfig starts an instance whose relay has cfg's MaxPayload,
// Key and MaxAge.
func startInstanceConfig(t *testing.T, name string, client redis.UniversalClient, cfg Config) *instance {
	t.Helper()
	obs := newCountingObserver()
	logs := &logRecorder{}
	r, err := New(Config{Client: client, Observer: obs, Logger: slog.New(logs), RetryInterval: 20 * time.Millisecond, PingInterval: time.Second,
		MaxPayload: cfg.MaxPayload, Key: cfg.Key, MaxAge: cfg.MaxAge, Tracer: cfg.Tracer})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b := broker.NewWithConfig(broker.Config{Hooks: r})
	if err := r.Start(b); err != nil {
		t.Fatalf("Start: %v", err)
	}
	srv, err := server.New(server.Config{Broker: b, Relay: r, Name: name})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("%s: Shutdown: %v", name, err)
		}
		hs.Close()
		if err := r.Close(); err != nil {
			t.Errorf("%s: relay Close: %v", name, err)
		}
		_ = client.Close()
	})
	return &instance{
		name:   name,
		relay:  r,
		broker: b,
		url:    "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws",
		obs:    obs,
		logs:   logs,
		client: client,
	}
}

// dial connects the go-stomp client over a WebSocket to inst. It is
// disconnected when the test ends.
func (inst *instance) dial(t *testing.T) *stomp.Conn {
	t.Helper()
	return stomptest.Dial(t, inst.url)
}

// waitSubscribers waits until Redis counts want subscribers on dest's
// channel.
func waitSubscribers(t *testing.T, rdb redis.UniversalClient, r *Relay, dest string, want int64) {
	t.Helper()
	ch := r.Channel(dest)
	poll.Until(t, clientTimeout, func() error {
		n, err := rdb.PubSubNumSub(context.Background(), ch).Result()
		if err != nil {
			return err
		}
		if n[ch] != want {
			return fmt.Errorf("PUBSUB NUMSUB %s = %d, want %d", ch, n[ch], want)
		}
		return nil
	})
}

// countingObserver records the relay's events.
type countingObserver struct {
	mu       sync.Mutex
	messages map[string]int
	dropped  map[string]int
	outages  int // transitions into an outage
	outage   bool
	subs     int
	down     int
	resubs   map[string]int
	deliver  int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{messages: map[string]int{}, dropped: map[string]int{}, resubs: map[string]int{}}
}

func (o *countingObserver) RelayMessages(dir string, n int) {
	o.mu.Lock()
	o.messages[dir] += n
	o.mu.Unlock()
}

func (o *countingObserver) RelayDropped(reason string, n int) {
	o.mu.Lock()
	o.dropped[reason] += n
	o.mu.Unlock()
}

func (o *countingObserver) RelayOutage(active bool) {
	o.mu.Lock()
	if active && !o.outage {
		o.outages++
	}
	o.outage = active
	o.mu.Unlock()
}

func (o *countingObserver) RelaySubscriptions(n int) {
	o.mu.Lock()
	o.subs = n
	o.mu.Unlock()
}

func (o *countingObserver) RelaySubscriptionsDown(n int) {
	o.mu.Lock()
	o.down = n
	o.mu.Unlock()
}

func (o *countingObserver) RelayResubscribes(reason string, n int) {
	o.mu.Lock()
	o.resubs[reason] += n
	o.mu.Unlock()
}

// subscriptions returns the last subscription gauges: channels
// subscribed and channels without a live subscription.
func (o *countingObserver) subscriptions() (subs, down int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.subs, o.down
}

// resubscribes returns the connections replaced for reason.
func (o *countingObserver) resubscribes(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.resubs[reason]
}

func (o *countingObserver) Delivered(_ string, n int) {
	o.mu.Lock()
	o.deliver += n
	o.mu.Unlock()
}

func (o *countingObserver) count(dir string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.messages[dir]
}

func (o *countingObserver) drops(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.dropped[reason]
}

func (o *countingObserver) inOutage() (active bool, entered int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outage, o.outages
}

// crossesEventually sends to dest on pub until a message arrives on sub:
// the path through Redis between the two instances works (again).
func crossesEventually(t *testing.T, pub *stomp.Conn, sub *stomp.Subscription, dest string) {
	t.Helper()
	poll.Until(t, 2*clientTimeout, func() error {
		if err := pub.Send(dest, "text/plain", []byte("x"), nil); err != nil {
			t.Fatalf("SEND: %v", err)
		}
		select {
		case m := <-sub.C:
			if m.Err != nil {
				t.Fatalf("subscription: %v", m.Err)
			}
			return nil
		case <-time.After(100 * time.Millisecond):
			return fmt.Errorf("no message crossed yet")
		}
	})
}
