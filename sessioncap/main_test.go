package sessioncap

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/handshake"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestClient connects to url as the server does (ContextTimeoutEnabled
// set) and closes the client when the test ends.
func newTestClient(tb testing.TB, url string) redis.UniversalClient {
	tb.Helper()
	c, err := handshake.NewUniversalClient(url)
	if err != nil {
		tb.Fatalf("NewUniversalClient(%q): %v", url, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// newTestRedisStore is a RedisStore on url, closed when the test ends.
func newTestRedisStore(tb testing.TB, url string, cfg RedisConfig) *RedisStore {
	tb.Helper()
	cfg.Client = newTestClient(tb, url)
	s, err := NewRedisStore(cfg)
	if err != nil {
		tb.Fatalf("NewRedisStore: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
