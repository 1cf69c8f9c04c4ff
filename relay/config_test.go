package relay

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// newUnusedClient is a client that is never used to reach a server.
func newUnusedClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newUnusedClusterClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	client := newUnusedClient(t)
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for success
	}{
		{"zero with client", Config{Client: client}, ""},
		{"no client", Config{}, "relay: Client is nil"},
		{"brace in prefix", Config{Client: client, Prefix: "a{b"}, `relay: Prefix "a{b" contains a brace`},
		{"negative queue", Config{Client: client, QueueSize: -1}, "relay: QueueSize -1 is negative"},
		{"negative queue bytes", Config{Client: client, QueueBytes: -1}, "relay: QueueBytes -1 is negative"},
		{"negative batch", Config{Client: client, BatchSize: -2}, "relay: BatchSize -2 is negative"},
		{"negative groups", Config{Client: client, ShardGroups: -1}, "relay: ShardGroups -1 is negative"},
		{"too many groups", Config{Client: client, ShardGroups: 16385}, "relay: ShardGroups 16385 is above"},
		{"negative timeout", Config{Client: client, Timeout: -time.Second}, "relay: Timeout -1s is negative"},
		{"negative ping", Config{Client: client, PingInterval: -time.Second}, "relay: PingInterval -1s is negative"},
		{"negative retry", Config{Client: client, RetryInterval: -time.Second}, "relay: RetryInterval -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if r.cfg.QueueSize != DefaultQueueSize || r.cfg.BatchSize != DefaultBatchSize || r.cfg.Prefix != DefaultPrefix {
					t.Errorf("defaults: got queue %d batch %d prefix %q", r.cfg.QueueSize, r.cfg.BatchSize, r.cfg.Prefix)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error %v, want one containing %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("errors.Is(%v, ErrInvalidConfig) = false, want true", err)
			}
		})
	}
}

// Publish never blocks: past the queue's capacity messages are dropped
// and counted. The relay is not started, so nothing drains the queue.
func TestPublishDropsWhenFull(t *testing.T) {
	t.Parallel()
	obs := newCountingObserver()
	r, err := New(Config{Client: newUnusedClient(t), QueueSize: 4, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMessage()
	for range 10 {
		r.Publish(m)
	}
	if got := obs.drops(DropQueueFull); got != 6 {
		t.Errorf("dropped %d, want 6 (10 published, queue of 4)", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Publish(m)
	if got := obs.drops(DropQueueFull); got != 7 {
		t.Errorf("after Close: dropped %d, want 7", got)
	}
}

// The queue is bounded in bytes too: large messages are dropped once
// what is queued would pass QueueBytes, however few they are.
func TestPublishDropsPastQueueBytes(t *testing.T) {
	t.Parallel()
	obs := newCountingObserver()
	m := newTestMessage()
	size := m.MemSize()
	r, err := New(Config{Client: newUnusedClient(t), QueueSize: 100, QueueBytes: 3*size + size/2, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 10 {
		r.Publish(m)
	}
	if got := obs.drops(DropQueueFull); got != 7 {
		t.Errorf("dropped %d, want 7 (10 published, room for 3 by bytes)", got)
	}
	if got, want := r.outBytes.Load(), int64(3*size); got != want {
		t.Errorf("queued bytes %d, want %d", got, want)
	}
}

func TestStartTwiceAndAfterClose(t *testing.T) {
	t.Parallel()
	r, err := New(Config{Client: newUnusedClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(r)
	if err := r.Start(b); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := r.Start(b); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start: got %v, want ErrStarted", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	r2, _ := New(Config{Client: newUnusedClient(t)})
	_ = r2.Close()
	if err := r2.Start(b); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: got %v, want ErrClosed", err)
	}
}
