package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/server"
)

// TestRun drives an in-process server for half a second: messages are
// delivered and the CPU read from /proc (this process's, as the server
// runs in it) is counted per message.
func TestRun(t *testing.T) {
	// The shape measures delivery, not the per-session inbound budget,
	// which a publisher at full speed spends in milliseconds: the budget
	// is raised as the documented command line raises it.
	srv, err := server.New(server.Config{InboundFrames: 100_000_000, InboundBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	r, err := run(context.Background(), config{url: url, pid: os.Getpid(), publishers: 3, window: 4, size: 50,
		warmup: 100 * time.Millisecond, duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered <= 0 || r.PerSec <= 0 || r.CPUMicros <= 0 {
		t.Fatalf("result %+v: want messages delivered and CPU counted per message", r)
	}
	t.Logf("%+v", r)
}

func TestRunRefusesBadSettings(t *testing.T) {
	good := config{url: "ws://127.0.0.1:1/ws", publishers: 1, window: 1, size: 10, duration: time.Second}
	for _, tt := range []struct {
		name string
		set  func(*config)
		want string
	}{
		{"no publishers", func(c *config) { c.publishers = 0 }, "-publishers"},
		{"no window", func(c *config) { c.window = 0 }, "-window"},
		{"tiny body", func(c *config) { c.size = 1 }, "-size"},
		{"no duration", func(c *config) { c.duration = 0 }, "-duration"},
	} {
		c := good
		tt.set(&c)
		if _, err := run(context.Background(), c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.want)
		}
	}
}
