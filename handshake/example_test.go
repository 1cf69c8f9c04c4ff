package handshake_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/stompgate/stompgate/clientip"
	"github.com/stompgate/stompgate/handshake"
)

// Seven immediate handshakes from one address at 3r/s burst=5: six reach the
// WebSocket handler, the seventh is answered 429 before any WebSocket work.
func ExampleMiddleware() {
	limiter, err := handshake.New(handshake.Config{}) // no Redis: in-process store
	if err != nil {
		fmt.Println(err)
		return
	}
	upgrade := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _ := clientip.AddrFrom(r.Context())
		fmt.Fprintf(w, "upgrade for %s", ip) // websocket.Accept would go here
	})
	h, err := handshake.Middleware(handshake.MiddlewareConfig{
		Limiter: limiter,
		Limit:   handshake.Limit{Name: "ws_handshake", Rate: 3000, Burst: 5},
		// The earliest second of the Retry-After jitter, for a stable
		// output; leave Rand nil to spread refused clients.
		Rand: func() float64 { return 0 },
	}, upgrade)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; i <= 7; i++ {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = "192.0.2.1:51000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(i, w.Code, w.Body.String())
		if w.Code == http.StatusTooManyRequests {
			fmt.Println("Retry-After:", w.Header().Get("Retry-After"))
			fmt.Println("RateLimit-Policy:", w.Header().Get("RateLimit-Policy"))
			fmt.Println("RateLimit:", w.Header().Get("RateLimit"))
		}
	}
	// Output:
	// 1 200 upgrade for 192.0.2.1
	// 2 200 upgrade for 192.0.2.1
	// 3 200 upgrade for 192.0.2.1
	// 4 200 upgrade for 192.0.2.1
	// 5 200 upgrade for 192.0.2.1
	// 6 200 upgrade for 192.0.2.1
	// 7 429 too many requests, retry after 1s
	//
	// Retry-After: 1
	// RateLimit-Policy: "ws_handshake";q=6;w=2
	// RateLimit: "ws_handshake";r=0;t=1
}

// The edge of nginx's millisecond arithmetic at 3r/s burst=5: once the burst
// is spent, 333ms drain 999 thousandths of a request (not enough), 334ms
// drain 1002.
func ExampleMemoryStore_AllowAt() {
	s, err := handshake.NewMemoryStore(handshake.MemoryConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	l := handshake.Limit{Name: "ws_handshake", Rate: 3000, Burst: 5}
	t0 := time.UnixMilli(1_763_000_000_000)
	for _, ms := range []int{0, 0, 0, 0, 0, 0, 0, 333, 334} {
		r, _ := s.AllowAt(t0.Add(time.Duration(ms)*time.Millisecond), "192.0.2.1", l)
		fmt.Printf("t0+%dms allowed=%v excess=%d retry=%v\n", ms, r.Allowed, r.Excess, r.RetryAfter)
	}
	// Output:
	// t0+0ms allowed=true excess=0 retry=0s
	// t0+0ms allowed=true excess=1000 retry=0s
	// t0+0ms allowed=true excess=2000 retry=0s
	// t0+0ms allowed=true excess=3000 retry=0s
	// t0+0ms allowed=true excess=4000 retry=0s
	// t0+0ms allowed=true excess=5000 retry=0s
	// t0+0ms allowed=false excess=5000 retry=334ms
	// t0+333ms allowed=false excess=5000 retry=1ms
	// t0+334ms allowed=true excess=4998 retry=0s
}
