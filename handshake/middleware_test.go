package handshake

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stompgate/stompgate/clientip"
)

// newTestMiddleware returns the middleware on a memory-only Limiter with a
// fixed clock, and a next handler that records the client address.
func newTestMiddleware(t *testing.T, clock *fakeClock, trusted []netip.Prefix) (http.Handler, *[]netip.Addr) {
	t.Helper()
	mem, err := NewMemoryStore(MemoryConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Memory: mem, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var seen []netip.Addr
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, ok := clientip.AddrFrom(r.Context())
		if !ok {
			t.Error("clientip.AddrFrom = false in the next handler, want the client address")
		}
		seen = append(seen, ip)
		w.WriteHeader(http.StatusSwitchingProtocols)
	})
	h, err := Middleware(MiddlewareConfig{Limiter: l, Limit: handshakeLimit, TrustedProxies: trusted}, next)
	if err != nil {
		t.Fatal(err)
	}
	return h, &seen
}

func get(h http.Handler, remote string, xff string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/ws", nil)
	r.RemoteAddr = remote
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// 3r/s burst 5: six immediate handshakes pass, the seventh gets 429 with
// Retry-After and the RateLimit headers.
func TestMiddlewareSeventhRequest(t *testing.T) {
	clock := &fakeClock{now: t0}
	h, seen := newTestMiddleware(t, clock, nil)
	for i := range 6 {
		if w := get(h, "192.0.2.1:40000", ""); w.Code != http.StatusSwitchingProtocols {
			t.Fatalf("request %d: status %d, want %d", i+1, w.Code, http.StatusSwitchingProtocols)
		}
	}
	w := get(h, "192.0.2.1:40001", "")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("7th request: status %d, want %d", w.Code, http.StatusTooManyRequests)
	}
	for header, want := range map[string]string{
		"Retry-After":      "1", // 334ms, rounded up
		"RateLimit-Policy": `"ws_handshake";q=6;w=2`,
		"RateLimit":        `"ws_handshake";r=0;t=1`,
		"Content-Type":     "text/plain; charset=utf-8",
	} {
		if got := w.Header().Get(header); got != want {
			t.Errorf("7th request: %s = %q, want %q", header, got, want)
		}
	}
	if got, want := w.Body.String(), "too many requests, retry after 1s\n"; got != want {
		t.Errorf("7th request body = %q, want %q", got, want)
	}
	if len(*seen) != 6 || (*seen)[0] != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("next saw %v, want 192.0.2.1 six times", *seen)
	}
	// Another client is not affected.
	if w := get(h, "192.0.2.2:40000", ""); w.Code != http.StatusSwitchingProtocols {
		t.Errorf("other client: status %d, want %d", w.Code, http.StatusSwitchingProtocols)
	}
	// 334ms later one more passes.
	clock.Advance(334 * time.Millisecond)
	if w := get(h, "192.0.2.1:40002", ""); w.Code != http.StatusSwitchingProtocols {
		t.Errorf("after 334ms: status %d, want %d", w.Code, http.StatusSwitchingProtocols)
	}
}

// X-Forwarded-For counts only from a trusted proxy: an untrusted client
// cannot escape its limit by sending a new header each time.
func TestMiddlewareForwardedFor(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	t.Run("untrusted peer", func(t *testing.T) {
		h, _ := newTestMiddleware(t, &fakeClock{now: t0}, proxies)
		codes := make([]int, 7)
		for i := range codes {
			codes[i] = get(h, "192.0.2.1:40000", "198.51.100."+strconv.Itoa(i)).Code
		}
		if codes[6] != http.StatusTooManyRequests {
			t.Errorf("spoofed X-Forwarded-For: statuses %v, want the 7th refused", codes)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		h, seen := newTestMiddleware(t, &fakeClock{now: t0}, proxies)
		for i := range 7 {
			if w := get(h, "10.0.0.1:40000", "198.51.100."+strconv.Itoa(i)); w.Code != http.StatusSwitchingProtocols {
				t.Errorf("client %d behind the proxy: status %d, want %d", i, w.Code, http.StatusSwitchingProtocols)
			}
		}
		if got := (*seen)[6]; got != netip.MustParseAddr("198.51.100.6") {
			t.Errorf("clientip.AddrFrom = %s, want 198.51.100.6", got)
		}
		// One client behind the proxy is still limited.
		var last int
		for range 7 {
			last = get(h, "10.0.0.1:40000", "198.51.100.200").Code
		}
		if last != http.StatusTooManyRequests {
			t.Errorf("7th request of one client behind the proxy: status %d, want %d", last, http.StatusTooManyRequests)
		}
	})
}

func TestMiddlewareBanned(t *testing.T) {
	clock := &fakeClock{now: t0}
	mem, err := NewMemoryStore(MemoryConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Middleware(MiddlewareConfig{Limiter: l, Limit: handshakeLimit}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ban(t.Context(), "192.0.2.1", 90*time.Second+time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w := get(h, "192.0.2.1:1", "")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "91" {
		t.Errorf("banned: status %d Retry-After %q, want 429 and 91", w.Code, w.Header().Get("Retry-After"))
	}
}

func TestMiddlewareConfig(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	next := http.NotFoundHandler()
	tests := []struct {
		name    string
		cfg     MiddlewareConfig
		next    http.Handler
		wantErr error
	}{
		{name: "nil limiter", cfg: MiddlewareConfig{Limit: handshakeLimit}, next: next, wantErr: ErrInvalidConfig},
		{name: "nil next", cfg: MiddlewareConfig{Limiter: l, Limit: handshakeLimit}, wantErr: ErrInvalidConfig},
		{name: "zero limit", cfg: MiddlewareConfig{Limiter: l}, next: next, wantErr: ErrInvalidLimit},
		{name: "valid", cfg: MiddlewareConfig{Limiter: l, Limit: handshakeLimit}, next: next},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Middleware(tt.cfg, tt.next)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("Middleware error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{time.Millisecond, 1},
		{334 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Millisecond, 2},
		{0, 1},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestWindowSeconds(t *testing.T) {
	tests := []struct {
		l    Limit
		want int64
	}{
		{Limit{Rate: 3000, Burst: 5}, 2},  // 6 requests at 3r/s
		{Limit{Rate: 2000, Burst: 4}, 3},  // 5 at 2r/s: 2.5s
		{Limit{Rate: 5000, Burst: 10}, 3}, // 11 at 5r/s: 2.2s
		{Limit{Rate: 500, Burst: 0}, 2},   // 30r/m
		{Limit{Rate: 1_000_000, Burst: 0}, 1},
	}
	for _, tt := range tests {
		if got := windowSeconds(tt.l); got != tt.want {
			t.Errorf("windowSeconds(%+v) = %d, want %d", tt.l, got, tt.want)
		}
	}
}
