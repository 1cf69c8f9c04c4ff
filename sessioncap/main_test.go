package sessioncap

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

// newTestRedisStore is a RedisStore on url, closed when the test ends.
// Unless cfg sets one, its Timeout is a second, not the 50 ms default: a
// first call dials and loads the script, which a machine busy with the
// race detector can take longer than 50 ms to do. A killed server
// refuses at once anyway.
func newTestRedisStore(tb testing.TB, url string, cfg RedisConfig) *RedisStore {
	tb.Helper()
	cfg.Client = newTestClient(tb, url)
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	s, err := NewRedisStore(cfg)
	if err != nil {
		tb.Fatalf("NewRedisStore: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
