package sessioncap

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
)

// newCappedServer serves a real STOMP server behind Middleware with a
// cap of max per client IP, on an httptest listener.
func newCappedServer(t *testing.T, l *Limiter, max int) string {
	t.Helper()
	return serveCapped(t, MiddlewareConfig{Limiter: l, Zone: "ws_handshake", Max: max})
}

// serveCapped serves a real STOMP server behind Middleware configured by
// cfg (its Logger discards), on an httptest listener, and returns its URL.
func serveCapped(t *testing.T, cfg MiddlewareConfig) string {
	t.Helper()
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	h, err := Middleware(cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
	})
	return hs.URL
}

// dial opens a WebSocket to base's root; it returns the connection
// (closed when the test ends) or the refusal.
func dial(t *testing.T, base string) (*websocket.Conn, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http"), &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return nil, resp
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c, resp
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	obs := newCountingObserver()
	l := newTestLimiter(t, "", false, obs)
	base := newCappedServer(t, l, 2)
	const key = "ws_handshake:127.0.0.1"

	var open []*websocket.Conn
	for i := range 2 {
		c, resp := dial(t, base)
		if c == nil {
			t.Fatalf("socket %d: HTTP %d, want 101", i+1, resp.StatusCode)
		}
		open = append(open, c)
	}
	c, resp := dial(t, base)
	if c != nil {
		t.Fatal("socket 3: accepted over the cap of 2")
	}
	body, _ := io.ReadAll(resp.Body)
	// DefaultRetryAfter (2 s) with its jitter: 2 or 3 s.
	if ra := resp.Header.Get("Retry-After"); resp.StatusCode != http.StatusTooManyRequests || (ra != "2" && ra != "3") {
		t.Errorf("socket 3: HTTP %d Retry-After %q, want 429 and 2 or 3", resp.StatusCode, ra)
	}
	if ra := resp.Header.Get("Retry-After"); !strings.Contains(string(body), "retry after "+ra+"s") {
		t.Errorf("socket 3: body %q, want the Retry-After %s in it", body, ra)
	}
	if !strings.Contains(string(body), "too many open sessions") {
		t.Errorf("socket 3: body %q, want it to say why", body)
	}

	// A session that ends gives its slot back, through OnSessionEnd.
	if err := open[0].Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := l.Held(ScopeIP, key); n != 1 {
			return fmt.Errorf("Held = %d after a close, want 1", n)
		}
		return nil
	})
	if c, resp := dial(t, base); c == nil {
		t.Fatalf("after a close: HTTP %d, want 101", resp.StatusCode)
	}

	// A request that never becomes a session gives its slot back before
	// the handler returns.
	_ = open[1].CloseNow()
	poll.Until(t, 10*time.Second, func() error {
		if n := l.Held(ScopeIP, key); n != 1 {
			return fmt.Errorf("Held = %d, want 1", n)
		}
		return nil
	})
	r, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode == http.StatusSwitchingProtocols || r.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("plain GET: HTTP %d, want the upgrade to fail", r.StatusCode)
	}
	if n := l.Held(ScopeIP, key); n != 1 {
		t.Errorf("Held after a failed upgrade = %d, want 1: its slot leaked", n)
	}
}

func TestMiddlewareConfig(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, "", false, nil)
	next := http.NotFoundHandler()
	tests := []struct {
		name    string
		cfg     MiddlewareConfig
		wantErr string
	}{
		{name: "no limiter", cfg: MiddlewareConfig{Zone: "z", Max: 1}, wantErr: "sessioncap: MiddlewareConfig.Limiter is nil"},
		{name: "no zone", cfg: MiddlewareConfig{Limiter: l, Max: 1}, wantErr: "sessioncap: MiddlewareConfig.Zone is empty"},
		{name: "zero max", cfg: MiddlewareConfig{Limiter: l, Zone: "z"}, wantErr: "sessioncap: MiddlewareConfig.Max 0 is below 1"},
		{name: "negative retry", cfg: MiddlewareConfig{Limiter: l, Zone: "z", Max: 1, RetryAfter: -time.Second}, wantErr: "sessioncap: MiddlewareConfig.RetryAfter -1s is negative"},
		{name: "negative acquire timeout", cfg: MiddlewareConfig{Limiter: l, Zone: "z", Max: 1, AcquireTimeout: -time.Second}, wantErr: "sessioncap: MiddlewareConfig.AcquireTimeout -1s is negative"},
		{name: "prefix too long", cfg: MiddlewareConfig{Limiter: l, Zone: "z", Max: 1, IPv6Prefix: 129}, wantErr: "sessioncap: MiddlewareConfig.IPv6Prefix 129 is not between 1 and 128"},
		{name: "negative prefix", cfg: MiddlewareConfig{Limiter: l, Zone: "z", Max: 1, IPv6Prefix: -1}, wantErr: "sessioncap: MiddlewareConfig.IPv6Prefix -1 is not between 1 and 128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Middleware(tt.cfg, next); err == nil || err.Error() != tt.wantErr {
				t.Errorf("Middleware error = %v, want %s", err, tt.wantErr)
			}
		})
	}
}

// TestMiddlewareCapsIPv6Prefix opens sessions from addresses of one /64,
// told by a trusted proxy's X-Forwarded-For, on a real server: they share
// one cap, and an address of another /64 has a cap of its own.
func TestMiddlewareCapsIPv6Prefix(t *testing.T) {
	t.Parallel()
	l := newTestLimiter(t, "", false, nil)
	var prefixRefused atomic.Int64
	url := serveCapped(t, MiddlewareConfig{
		Limiter: l, Zone: "ws_handshake", Max: 2,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		PrefixRefused:  func() { prefixRefused.Add(1) },
	})
	from := func(addr string) (*websocket.Conn, *http.Response) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), &websocket.DialOptions{
			Subprotocols: []string{"v12.stomp"},
			HTTPHeader:   http.Header{"X-Forwarded-For": {addr}},
		})
		if err != nil {
			if resp == nil {
				t.Fatalf("dial from %s: %v", addr, err)
			}
			return nil, resp
		}
		t.Cleanup(func() { _ = c.CloseNow() })
		return c, resp
	}
	for _, addr := range []string{"2001:db8:7:1::1", "2001:db8:7:1::2"} {
		if c, resp := from(addr); c == nil {
			t.Fatalf("session from %s: HTTP %d, want 101", addr, resp.StatusCode)
		}
	}
	if c, resp := from("2001:db8:7:1:abcd::3"); c != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third session from the /64, a new address: accepted %v, want 429 (cap 2 per /64)", c != nil)
	}
	if n := prefixRefused.Load(); n != 1 {
		t.Errorf("PrefixRefused called %d times, want 1", n)
	}
	if c, resp := from("2001:db8:7:2::1"); c == nil {
		t.Errorf("session from another /64: HTTP %d, want 101", resp.StatusCode)
	}
	if n := l.Held(ScopeIP, "ws_handshake:2001:db8:7:1::/64"); n != 2 {
		t.Errorf("Held(2001:db8:7:1::/64) = %d, want 2", n)
	}
}

// TestMiddlewareAcquireTimeout pauses the Redis the cap is kept in, so
// that a handshake's decision outlasts AcquireTimeout: the handshake is
// refused as busy (503 with a jittered Retry-After, never 500), counted
// as a timed-out decision whatever the fail mode, and the next handshake
// after Redis resumes is decided by Redis again.
func TestMiddlewareAcquireTimeout(t *testing.T) {
	t.Parallel()
	for _, failClosed := range []bool{false, true} {
		t.Run(fmt.Sprintf("failClosed=%v", failClosed), func(t *testing.T) {
			t.Parallel()
			srv := testredis.Start(t)
			obs := newCountingObserver()
			// The Redis call's own bound (a minute) never ends first: the
			// handshake's does.
			l := newJudgedLimiter(t, srv, time.Minute, 0, 0, obs)
			l.failClosed = failClosed
			base := serveCapped(t, MiddlewareConfig{Limiter: l, Zone: "ws_handshake", Max: 2,
				AcquireTimeout: 200 * time.Millisecond, Rand: func() float64 { return 0.99 }})

			srv.Pause()
			c, resp := dial(t, base)
			srv.Resume()
			if c != nil {
				t.Fatal("Redis paused: accepted, want a refusal")
			}
			body, _ := io.ReadAll(resp.Body)
			// DefaultRetryAfter (2 s) jittered by its spread (1 s): 3 at 0.99.
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
				t.Fatalf("Redis paused: HTTP %d Retry-After %q (%q), want 503 and 3", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			if !strings.Contains(string(body), "server busy") || !strings.Contains(string(body), "retry after 3s") {
				t.Errorf("Redis paused: body %q, want it to say busy and when to retry", body)
			}
			obs.mu.Lock()
			ds := append([]Decision(nil), obs.decisions[ScopeIP]...)
			obs.mu.Unlock()
			if len(ds) != 1 || ds[0] != (Decision{Store: StoreNone, TimedOut: true}) {
				t.Fatalf("decisions %+v, want one timed out", ds)
			}
			if h := ds[0].Handshake(); h != outcome.HandshakeSessionCapTimeout {
				t.Errorf("Handshake() = %v, want %v", h, outcome.HandshakeSessionCapTimeout)
			}
			if n := l.Held(ScopeIP, "ws_handshake:127.0.0.1"); n != 0 {
				t.Errorf("Held = %d after a refusal, want 0", n)
			}

			poll.Until(t, 30*time.Second, func() error {
				c, resp := dial(t, base)
				if c == nil {
					return fmt.Errorf("Redis resumed: HTTP %d, want 101", resp.StatusCode)
				}
				return nil
			})
		})
	}
}
