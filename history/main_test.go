package history

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

// t0 is the fixed instant of the step tables.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestClient connects to url as the server does (ContextTimeoutEnabled
// set) and closes the client when the test ends.
func newTestClient(tb testing.TB, url string) redis.UniversalClient {
	tb.Helper()
	c, err := redisclient.New(url)
	if err != nil {
		tb.Fatalf("redisclient.New(%q): %v", url, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// newTestRedisStore is a RedisStore on url with a generous Timeout: the
// race detector on a busy machine can make a first call (dial, script
// load) slow.
func newTestRedisStore(tb testing.TB, url string, cfg RedisConfig) *RedisStore {
	tb.Helper()
	cfg.Client = newTestClient(tb, url)
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	s, err := NewRedisStore(cfg)
	if err != nil {
		tb.Fatalf("NewRedisStore: %v", err)
	}
	return s
}
