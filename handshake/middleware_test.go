package handshake

import (
	"errors"
	"fmt"
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
	// 334ms, rounded up, with up to a second of jitter above it.
	ra := w.Header().Get("Retry-After")
	if ra != "1" && ra != "2" {
		t.Errorf("7th request: Retry-After = %q, want 1 or 2", ra)
	}
	for header, want := range map[string]string{
		"RateLimit-Policy": `"ws_handshake";q=6;w=2`,
		"RateLimit":        `"ws_handshake";r=0;t=` + ra,
		"Content-Type":     "text/plain; charset=utf-8",
	} {
		if got := w.Header().Get(header); got != want {
			t.Errorf("7th request: %s = %q, want %q", header, got, want)
		}
	}
	if got, want := w.Body.String(), "too many requests, retry after "+ra+"s\n"; got != want {
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
	// 90.001 s rounded up, with up to 10 s of jitter above it.
	if ra, _ := strconv.Atoi(w.Header().Get("Retry-After")); w.Code != http.StatusTooManyRequests || ra < 91 || ra > 101 {
		t.Errorf("banned: status %d Retry-After %q, want 429 and 91 to 101", w.Code, w.Header().Get("Retry-After"))
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

// The Retry-After of a refusal is drawn over [true time, true time +
// its spread]: at 334 ms left, 1 or 2 s, both drawn; the RateLimit t and
// the body say the same.
func TestMiddlewareRetryAfterJitter(t *testing.T) {
	clock := &fakeClock{now: t0}
	mem, err := NewMemoryStore(MemoryConfig{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{Memory: mem, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	draws := []float64{0, 0.49, 0.5, 0.99}
	i := 0
	h, err := Middleware(MiddlewareConfig{Limiter: l, Limit: handshakeLimit,
		Rand: func() float64 { v := draws[i%len(draws)]; i++; return v }}, http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for c := range 40 {
		remote := fmt.Sprintf("192.0.2.%d:1", c+1)
		for range 6 {
			get(h, remote, "")
		}
		w := get(h, remote, "")
		ra := w.Header().Get("Retry-After")
		if w.Code != http.StatusTooManyRequests || (ra != "1" && ra != "2") {
			t.Fatalf("client %d: %d Retry-After %q, want 429 and 1 or 2", c, w.Code, ra)
		}
		if got, want := w.Header().Get("RateLimit"), `"ws_handshake";r=0;t=`+ra; got != want {
			t.Errorf("RateLimit %q, want %q", got, want)
		}
		if got, want := w.Body.String(), "too many requests, retry after "+ra+"s\n"; got != want {
			t.Errorf("body %q, want %q", got, want)
		}
		seen[ra]++
	}
	if seen["1"] != 20 || seen["2"] != 20 {
		t.Errorf("Retry-After drawn %v, want 1 and 2 equally", seen)
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
