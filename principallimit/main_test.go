package principallimit

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/redisclient"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the instant step tables count from: on a window boundary of
// Redis' clock for every window below a second, so that a table's
// windows and Redis' agree.
var t0 = time.UnixMilli(1_800_000_000_000)

// clock is a test's clock, shared by a Limiter's decisions and, through
// the RedisStore's nowMs hook, the script's windows.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
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

// newTestRedisStore is a RedisStore on url whose script takes c's time
// (nil: Redis TIME). Its Timeout is a second, not the 50 ms default: a
// first call dials and loads the script, which a machine busy with the
// race detector can take longer than 50 ms to do. A killed server
// refuses at once anyway.
func newTestRedisStore(tb testing.TB, url string, c *clock) *RedisStore {
	tb.Helper()
	s, err := NewRedisStore(RedisConfig{Client: newTestClient(tb, url), Timeout: time.Second})
	if err != nil {
		tb.Fatalf("NewRedisStore: %v", err)
	}
	if c != nil {
		s.nowMs = func() int64 { return c.now().UnixMilli() }
	}
	return s
}

// newTestLimiter is a Limiter of cfg, closed when the test ends.
func newTestLimiter(tb testing.TB, cfg Config) *Limiter {
	tb.Helper()
	l, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

// countingObserver counts what a Limiter reports.
type countingObserver struct {
	mu        sync.Mutex
	decisions map[Decision]int
	trips     int
	errs      int
	fallback  []bool
	evicted   int
}

func newCountingObserver() *countingObserver {
	return &countingObserver{decisions: map[Decision]int{}}
}

func (o *countingObserver) Decision(d Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decisions[d]++
}

func (o *countingObserver) RoundTrip() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.trips++
}

func (o *countingObserver) StoreError(error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs++
}

func (o *countingObserver) Fallback(active bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fallback = append(o.fallback, active)
}

func (o *countingObserver) Confirmation(bool) {}

func (o *countingObserver) Evicted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evicted++
}

func (o *countingObserver) roundTrips() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.trips
}
