package reconnect

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/redisclient"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fixed instant the step tables count from.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestRedisStore is a RedisStore on url, its client closed when the
// test ends. Its Timeout is a second, not the 50 ms default: a first call
// dials and loads the script, which a machine busy with the race detector
// can take longer than 50 ms to do. A killed server refuses at once
// anyway.
func newTestRedisStore(tb testing.TB, url string) (*RedisStore, redis.UniversalClient) {
	tb.Helper()
	c, err := redisclient.New(url)
	if err != nil {
		tb.Fatalf("redisclient.New(%q): %v", url, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	s, err := NewRedisStore(RedisConfig{Client: c, Timeout: time.Second})
	if err != nil {
		tb.Fatalf("NewRedisStore: %v", err)
	}
	return s, c
}

// newTestCounter is a Counter on cfg, closed when the test ends.
func newTestCounter(tb testing.TB, cfg Config) *Counter {
	tb.Helper()
	c, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
