package principallimit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// step is one decision of a table: n frames of principal at t0+at.
type step struct {
	at        time.Duration
	principal string
	n         int
	allowed   bool
	source    string
}

// run plays steps on l, moving c (when not nil) to each step's instant.
func run(t *testing.T, l *Limiter, c *clock, lim Limit, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := t0.Add(s.at)
		if c != nil {
			c.set(now)
		}
		n := s.n
		if n == 0 {
			n = 1
		}
		d := l.AllowAt(now, s.principal, n, lim)
		if d.Allowed != s.allowed || d.Source != s.source {
			t.Errorf("step %d (%s at +%v, n %d): %+v, want allowed %v by %s", i, s.principal, s.at, n, d, s.allowed, s.source)
		}
	}
}

// Without Redis each principal has its own fixed window on this
// instance, reset lazily by the first frame after it ends.
func TestLimiterMemory(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 3, Window: time.Second})
	m := SourceMemory
	run(t, l, nil, l.Global(), []step{
		{0, "alice", 1, true, m},
		{100 * time.Millisecond, "alice", 2, true, m},
		{200 * time.Millisecond, "alice", 1, false, m},
		{300 * time.Millisecond, "bob", 3, true, m}, // another principal is not affected
		{400 * time.Millisecond, "bob", 1, false, m},
		{999 * time.Millisecond, "alice", 1, false, m},
		{time.Second, "alice", 1, true, m}, // the window ended
		{time.Second, "alice", 3, false, m},
		{time.Second, "alice", 2, true, m},
		{time.Second + 300*time.Millisecond, "bob", 1, true, m}, // bob's window started at +300ms
	})
	// A limit of zero, an empty principal and n below 1 pass uncounted.
	for _, tc := range []struct {
		p   string
		n   int
		lim Limit
	}{{"alice", 1, Limit{}}, {"", 1, l.Global()}, {"alice", 0, l.Global()}} {
		if d := l.AllowAt(t0.Add(time.Second), tc.p, tc.n, tc.lim); !d.Allowed || d.Source != SourceLocal {
			t.Errorf("AllowAt(%q, %d, %+v) = %+v, want allowed uncounted", tc.p, tc.n, tc.lim, d)
		}
	}
}

// Rules count apart, each with its own limit and window.
func TestLimiterRules(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, Config{Limit: 2})
	chat := Limit{Rule: "chat", Limit: 1, Window: 500 * time.Millisecond}
	run(t, l, nil, chat, []step{
		{0, "alice", 1, true, SourceMemory},
		{100 * time.Millisecond, "alice", 1, false, SourceMemory},
		{500 * time.Millisecond, "alice", 1, true, SourceMemory},
	})
	run(t, l, nil, l.Global(), []step{
		{0, "alice", 2, true, SourceMemory},
		{100 * time.Millisecond, "alice", 1, false, SourceMemory},
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Limit: -1}, {Window: -1}, {Optimistic: -1}, {MaxPrincipals: -1}, {RetryInterval: -1}, {ConfirmTimeout: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := NewRedisStore(RedisConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewRedisStore without a client = %v, want ErrInvalidConfig", err)
	}
}

// The table holds at most its bound: a flood of principals evicts
// expired entries first, then arbitrary ones, each counted.
func TestTableBounded(t *testing.T) {
	t.Parallel()
	obs := newCountingObserver()
	l := newTestLimiter(t, Config{Limit: 1, MaxPrincipals: tableShards, Observer: obs})
	for i := range 10 * tableShards {
		l.AllowAt(t0, fmt.Sprint("p", i), 1, l.Global())
	}
	if n := l.entries.len(); n > tableShards {
		t.Errorf("entries = %d, want at most %d", n, tableShards)
	}
	if obs.evicted == 0 {
		t.Error("no eviction counted while the windows ran")
	}
	before := obs.evicted
	// Once the windows ended, new principals take expired entries'
	// places: nothing more is evicted.
	for i := range 10 * tableShards {
		l.AllowAt(t0.Add(time.Hour+time.Duration(i)), fmt.Sprint("q", i), 1, Limit{Limit: 1, Window: time.Nanosecond})
	}
	if obs.evicted != before {
		t.Errorf("evictions rose from %d to %d with every entry expired", before, obs.evicted)
	}
}
