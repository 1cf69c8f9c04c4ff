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
		if e := c.Expect("ERROR"); e.Get("message") != "server shutting down" {
			t.Fatalf("client %d: ERROR %q", i, e.Get("message"))
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
