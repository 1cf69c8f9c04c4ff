package handshake

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stompgate/stompgate/clientip"
)

func TestMiddlewareIPv6PrefixSetting(t *testing.T) {
	if _, err := Middleware(MiddlewareConfig{Limiter: &Limiter{}, Limit: Limit{Name: "z", Rate: 1000, Burst: 1}, IPv6Prefix: 129}, http.NotFoundHandler()); err == nil {
		t.Error("Middleware with IPv6Prefix 129 = nil error, want one naming the setting")
	} else if want := "handshake: MiddlewareConfig.IPv6Prefix 129 is not between 1 and 128"; err.Error() != want {
		t.Errorf("Middleware with IPv6Prefix 129 = %q, want %q", err, want)
	}
}

// TestMiddlewareKeysByPrefix sends handshakes from five addresses of one
// /64 and from another /64 through the middleware: the five share one
// burst, the other gets its own, and the key reaches the next handler.
func TestMiddlewareKeysByPrefix(t *testing.T) {
	mem, err := NewMemoryStore(MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := New(Config{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lim.Close() })
	var gotKey string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gotKey, _ = clientip.KeyFrom(r.Context()) })
	refused := 0
	h, err := Middleware(MiddlewareConfig{
		Limiter:       lim,
		Limit:         Limit{Name: "ws_handshake", Rate: 1, Burst: 4}, // 1 per 1000 s: nothing drains during the test
		PrefixRefused: func() { refused++ },
	}, next)
	if err != nil {
		t.Fatal(err)
	}
	send := func(addr string) int {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = "[" + addr + "]:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2::3", "2001:db8:1:2::4", "2001:db8:1:2:ffff::5"} {
		if code := send(addr); code != http.StatusOK {
			t.Fatalf("handshake %d from %s = %d, want 200 (within the shared burst of 5)", i+1, addr, code)
		}
	}
	if gotKey != "2001:db8:1:2::/64" {
		t.Errorf("clientip.KeyFrom in next = %q, want 2001:db8:1:2::/64", gotKey)
	}
	if code := send("2001:db8:1:2::6"); code != http.StatusTooManyRequests {
		t.Errorf("6th handshake from the /64 (a new address) = %d, want 429", code)
	}
	if refused != 1 {
		t.Errorf("PrefixRefused called %d times, want 1", refused)
	}
	if code := send("2001:db8:1:3::1"); code != http.StatusOK {
		t.Errorf("handshake from another /64 = %d, want 200", code)
	}
}
