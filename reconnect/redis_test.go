package reconnect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testredis"
)

// The script is the MemoryStore's function: the same step table, with
// the time passed in through the script's test hook, gives the same
// counts.
func TestRedisCountSteps(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	s, client := newTestRedisStore(t, rs.URL())
	const w = time.Minute
	base := t0.UnixMilli()
	ctx := context.Background()
	for i, step := range []struct {
		key  string
		at   time.Duration
		want int
	}{
		{"a", 0, 1},
		{"a", 10 * time.Second, 2},
		{"b", 10 * time.Second, 1},
		{"a", 59*time.Second + 999*time.Millisecond, 3},
		{"a", time.Minute, 1},
		{"a", time.Minute + 30*time.Second, 2},
		{"b", time.Minute + 9*time.Second, 2},
		{"b", time.Minute + 10*time.Second, 1},
		{"a", 30 * time.Second, 1}, // the clock went back: a new window
	} {
		now := base + step.at.Milliseconds()
		got, err := s.count(ctx, step.key, w, &now)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != step.want {
			t.Errorf("step %d: count(%q, t0+%v) = %d, want %d", i, step.key, step.at, got, step.want)
		}
	}
	// The hash is in one slot and expires with its window.
	ttl, err := client.PTTL(ctx, "stompgate:rc:{a}").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > w {
		t.Errorf("PTTL of a's window = %v, want within (0, %v]", ttl, w)
	}
}

// Without the test hook the script reads Redis TIME: counts within an
// hour-long window grow by one per call.
func TestRedisCountClock(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	s, _ := newTestRedisStore(t, rs.URL())
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		got, err := s.Count(ctx, "k", time.Hour)
		if err != nil || got != i {
			t.Fatalf("Count %d = %d, %v; want %d", i, got, err, i)
		}
	}
	if _, err := s.Count(ctx, "", time.Hour); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("Count of an empty key = %v, want ErrEmptyKey", err)
	}
}

func TestRedisConfigErrors(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	_, client := newTestRedisStore(t, rs.URL())
	for _, cfg := range []RedisConfig{
		{},
		{Client: client, Timeout: -1},
		{Client: client, TimeoutsToFail: -1},
		{Client: client, Prefix: "a{b"},
	} {
		if _, err := NewRedisStore(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewRedisStore(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
