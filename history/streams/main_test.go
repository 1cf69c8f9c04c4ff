package streams

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/history"
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

// newTestStore is a Store on url with a generous Timeout: the race
// detector on a busy machine can make a first call (dial, script load)
// slow.
func newTestStore(tb testing.TB, url string, cfg Config) *Store {
	tb.Helper()
	cfg.Client = newTestClient(tb, url)
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s
}

func mustAppend(t testing.TB, s history.Store, dest string, r history.Retention, data string) history.Position {
	t.Helper()
	pos, err := s.Append(context.Background(), dest, []byte(data), r)
	if err != nil {
		t.Fatalf("Append(%s, %q): %v", dest, data, err)
	}
	return pos
}

func mustTail(t testing.TB, s history.Store, dest string, limit int, r history.Retention) history.Snapshot {
	t.Helper()
	snap, err := s.Tail(context.Background(), dest, limit, r)
	if err != nil {
		t.Fatalf("Tail(%s): %v", dest, err)
	}
	return snap
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// spliceRetention keeps everything the splice test publishes.
var spliceRetention = history.Retention{Keep: 10_000}

// splice runs one subscription the way the server is meant to: register
// for live messages (the caller did), note when, read the history
// through rd, and hand both to a Recovery until want offsets were
// emitted. It returns the offsets emitted, in order, and the settling
// step.
func splice(t *testing.T, rd *history.Reader, live <-chan history.Message, dest string, start history.Start, want int) ([]uint64, history.Step) {
	t.Helper()
	subscribed := time.Now()
	rc := history.NewRecovery(10*want, 0)
	var got []uint64
	var decided history.Step
	take := func(st history.Step) {
		if st.Decided {
			decided = st
			if !st.Recovered {
				t.Fatalf("not recovered: %q", st.Reason)
			}
		}
		if st.Gap {
			t.Errorf("gap in live delivery: %q", st.Reason)
		}
		for _, m := range st.Emit {
			got = append(got, m.Offset)
		}
	}
	done := make(chan history.Result, 1)
	go func() {
		res, err := rd.Since(context.Background(), dest, spliceRetention, start, subscribed)
		if err != nil {
			t.Errorf("Since: %v", err)
		}
		done <- res
	}()
	timeout := time.After(30 * time.Second)
	for len(got) < want || !rc.Settled() {
		select {
		case m := <-live:
			take(rc.Live(m))
		case res := <-done:
			take(rc.Apply(res))
		case <-timeout:
			t.Fatalf("after 30s: %d of %d messages, settled %v", len(got), want, rc.Settled())
		}
	}
	return got, decided
}

// checkRun fails unless got is exactly from, from+1, ..., from+n-1.
func checkRun(t *testing.T, got []uint64, from uint64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d messages, want %d", len(got), n)
	}
	for i, o := range got {
		if o != from+uint64(i) {
			t.Fatalf("message %d has offset %d, want %d (a gap or a duplicate)", i, o, from+uint64(i))
		}
	}
}
