package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/poll"
)

// TestDrainSpreadsCloses drains a server with four sessions: it is not
// ready at once but keeps serving through the grace, then tells the
// sessions one at a time with the period split evenly between them, and
// refuses new handshakes.
func TestDrainSpreadsCloses(t *testing.T) {
	ts := startServer(t, Config{})
	var mu sync.Mutex
	var waits []time.Duration
	// Record the waits instead of sleeping; the grace's wait lets a new
	// session in to show the server still serves during it.
	graceDone := make(chan struct{})
	// The clock moves only by the waits, as if each took exactly as
	// long as asked.
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	ts.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		clock = clock.Add(d)
		first := len(waits) == 1
		mu.Unlock()
		if first {
			<-graceDone
		}
		return true
	}
	clients := make([]*rawClient, 3)
	for i := range clients {
		clients[i] = dialRaw(t, ts.url)
		clients[i].Connect()
	}
	done := make(chan error, 1)
	go func() { done <- ts.Drain(context.Background(), 5*time.Second, 600*time.Millisecond) }()
	poll.Until(t, 5*time.Second, func() error {
		if ts.Ready() {
			return fmt.Errorf("still ready while draining")
		}
		return nil
	})
	late := dialRaw(t, ts.url)
	late.Connect()
	close(graceDone)
	if err := <-done; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	for i, c := range append(clients, late) {
		e := c.Expect("ERROR")
		if e.Get("message") != "server shutting down" {
			t.Fatalf("client %d: ERROR %q", i, e.Get("message"))
		}
		// 4 sessions at DefaultRetryRate fit in the period: the window is
		// its least, 1 s.
		if ra := e.Get(RetryAfterHeader); ra != "1" {
			t.Errorf("client %d: retry-after %q, want 1", i, ra)
		}
		if code := c.ExpectClosed(); code != websocket.StatusGoingAway {
			t.Fatalf("client %d: close %v, want 1001", i, code)
		}
	}
	mu.Lock()
	got := append([]time.Duration(nil), waits...)
	mu.Unlock()
	want := []time.Duration{5 * time.Second, 150 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Drain waited %v, want the grace then the period split over 4 sessions: %v", got, want)
	}
	resp, err := http.Get("http" + ts.url[2:])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("handshake after the drain: %d, want 503", resp.StatusCode)
	}
}

// The retry-after window of the sessions a shutdown or a drain ends: as
// long as the retry rate needs for them beyond the period, from 1 s to
// RetryAfterMax.
func TestShutdownRetryWindow(t *testing.T) {
	s, err := New(Config{RetryRate: 10, RetryAfterMax: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n      int
		period time.Duration
		want   int64
	}{
		{0, 0, 1},
		{5, 0, 1},                 // half a second of the rate
		{25, 0, 3},                // 2.5 s
		{100, 0, 10},              // all at once: 10 s
		{100, 4 * time.Second, 6}, // the period carries 4 s of them
		{100, time.Minute, 1},     // the period alone is slow enough
		{10_000, 0, 30},           // bounded by RetryAfterMax
		{10_000, 10 * time.Minute, 30},
	} {
		if got := s.shutdownRetryWindow(c.n, c.period); got != c.want {
			t.Errorf("window(%d sessions over %v) = %d, want %d", c.n, c.period, got, c.want)
		}
	}
	for _, cfg := range []Config{{RetryRate: -1}, {RetryAfterMax: -time.Second}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// paceCloses at fixed instants: the clock moves only by the sleeps,
// each taking as long as asked plus an overrun. However late each
// wake-up, every session is closed by the period's end plus one
// wake-up's overrun, in even batches of what came due since the last.
func TestPaceCloses(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		n       int
		period  time.Duration
		overrun func(d time.Duration) time.Duration // added to each sleep
		// want: the sleeps asked for, each batch's size and when the
		// last session was closed (from the start).
		wantSleeps  int
		wantBatches map[int]int // batch size -> how many batches
		wantLast    time.Duration
	}{
		{
			name: "10,000 over 10s on time", n: 10_000, period: 10 * time.Second,
			overrun:    func(time.Duration) time.Duration { return 0 },
			wantSleeps: 1000, wantBatches: map[int]int{1: 1, 10: 999, 9: 1}, wantLast: 10 * time.Second,
		},
		{
			// Every timer fires three times late: 30 ms between wake-ups,
			// 30 sessions each, the last one still within the period plus
			// one overrun.
			name: "10,000 over 10s, wake-ups 3x late", n: 10_000, period: 10 * time.Second,
			overrun:    func(d time.Duration) time.Duration { return 2 * d },
			wantSleeps: 334, wantBatches: map[int]int{1: 1, 30: 333, 9: 1}, wantLast: 10*time.Second + 20*time.Millisecond,
		},
		{
			name: "4 over 600ms", n: 4, period: 600 * time.Millisecond,
			overrun:    func(time.Duration) time.Duration { return 0 },
			wantSleeps: 3, wantBatches: map[int]int{1: 4}, wantLast: 450 * time.Millisecond,
		},
		{
			name: "3 at once", n: 3, period: 0,
			overrun:    func(time.Duration) time.Duration { return 0 },
			wantSleeps: 0, wantBatches: map[int]int{3: 1}, wantLast: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := t0
			sleeps := 0
			sleep := func(_ context.Context, d time.Duration) bool {
				sleeps++
				clock = clock.Add(d + tt.overrun(d))
				return true
			}
			batches := map[int]int{}
			batch, closed := 0, 0
			var at time.Time
			var last time.Duration
			end := func(k int) {
				if k != closed {
					t.Fatalf("closed session %d, want %d: in order, each once", k, closed)
				}
				closed++
				if clock != at && batch > 0 {
					batches[batch]++
					batch = 0
				}
				at = clock
				batch++
				last = clock.Sub(t0)
			}
			if !paceCloses(context.Background(), tt.n, tt.period, func() time.Time { return clock }, sleep, end) {
				t.Fatal("paceCloses = false, want true")
			}
			batches[batch]++
			if closed != tt.n {
				t.Fatalf("closed %d sessions, want %d", closed, tt.n)
			}
			if sleeps != tt.wantSleeps || last != tt.wantLast || fmt.Sprint(batches) != fmt.Sprint(tt.wantBatches) {
				t.Errorf("%d sleeps, last closed at %v, batches (size: count) %v; want %d, %v, %v",
					sleeps, last, batches, tt.wantSleeps, tt.wantLast, tt.wantBatches)
			}
		})
	}
}

// A sleep cut short (ctx ended) stops the closes where they are.
func TestPaceClosesCanceled(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock, closed := t0, 0
	sleep := func(_ context.Context, d time.Duration) bool {
		clock = clock.Add(d)
		return clock.Sub(t0) < 50*time.Millisecond
	}
	if paceCloses(context.Background(), 100, time.Second, func() time.Time { return clock }, sleep, func(int) { closed++ }) {
		t.Fatal("paceCloses = true after a sleep was cut short, want false")
	}
	// Due by 40 ms: sessions 0 to 4 (each 10 ms apart); the sleep to 50 ms
	// was cut short.
	if closed != 5 {
		t.Errorf("closed %d, want 5", closed)
	}
}
