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
	ts.sleep = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
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
