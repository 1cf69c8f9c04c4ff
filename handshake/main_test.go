package handshake

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestClient connects to url with NewUniversalClient and closes the
// client when the test ends.
func newTestClient(tb testing.TB, url string) redis.UniversalClient {
	tb.Helper()
	c, err := NewUniversalClient(url)
	if err != nil {
		tb.Fatalf("NewUniversalClient(%q): %v", url, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
