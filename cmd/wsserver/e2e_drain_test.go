package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/testproc"
)

// TestDrainOnSignal runs the program with -drain-period and ends its
// context as a SIGTERM does: /readyz turns 503 while sessions are still
// served (a new one is still accepted during the grace), then every
// session gets ERROR "server shutting down" and run returns cleanly.
func TestDrainOnSignal(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	base := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-admin-addr", "127.0.0.1:0", "-log-level", "error", "-drain-grace", "2s", "-drain-period", "300ms"},
			func(string) string { return "" }, io.Discard)
	}()
	waitFor(t, 10*time.Second, func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %d", resp.StatusCode)
		}
		return nil
	})
	first, _, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatal(err)
	}
	c1 := connectStomp(t, first)
	sub1 := subscribe(t, c1, "/topic/drain")

	cancel()
	waitFor(t, 5*time.Second, func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("/readyz %d, want 503 while draining", resp.StatusCode)
		}
		return nil
	})
	// Still serving during the grace.
	second, _, err := dialWS(t, wsURL(base))
	if err != nil {
		t.Fatalf("handshake during the grace: %v", err)
	}
	c2 := connectStomp(t, second)
	sub2 := subscribe(t, c2, "/topic/drain")
	for i, sub := range []*stomp.Subscription{sub1, sub2} {
		select {
		case m := <-sub.C:
			if m.Err == nil || !strings.Contains(m.Err.Error(), "server shutting down") {
				t.Fatalf("session %d: got %v, want ERROR server shutting down", i, m)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("session %d: no ERROR after the drain", i)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after the drain")
	}
}
