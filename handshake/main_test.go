package handshake

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/redisclient"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestClient connects to url with redisclient.New, as the server does, and closes the
// client when the test ends.
func newTestClient(tb testing.TB, url string) redis.UniversalClient {
	tb.Helper()
	c, err := redisclient.New(url)
	if err != nil {
		tb.Fatalf("redisclient.New(%q): %v", url, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
