package server

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/outcome"
)

// testServer is a Server behind an httptest listener.
type testServer struct {
	*Server
	url string
	obs *countingObserver
}

func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	return startServerWith(t, cfg, nil)
}

// startServerWith is startServer with listen, when not nil, choosing the
// listener the server is served on from the test's own.
func startServerWith(t *testing.T, cfg Config, listen func(*Server, net.Listener) net.Listener) *testServer {
	t.Helper()
	obs := &countingObserver{closed: map[string]int{}, protocol: map[string]int{}, replaced: map[string]int{}, capRefused: map[string]int{}}
	if cfg.Observer == nil {
		cfg.Observer = obs
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewUnstartedServer(srv)
	if listen != nil {
		hs.Listener = listen(srv, hs.Listener)
	}
	hs.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
	})
	return &testServer{Server: srv, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", obs: obs}
}

// rawClient speaks STOMP by hand, for the cases a well-behaved client
// library never produces.
type rawClient = stomptest.Raw

func dialRaw(t *testing.T, url string, protos ...string) *rawClient {
	t.Helper()
	return stomptest.DialRaw(t, url, protos...)
}

// countingObserver records the server's events for assertions.
type countingObserver struct {
	mu         sync.Mutex
	opened     int
	closed     map[string]int
	delivered  int
	slow       int
	protocol   map[string]int
	panics     int
	paused     int
	hbCapped   int
	compressed int
	// replaced and capRefused count DestinationObserver's events by rule.
	replaced   map[string]int
	capRefused map[string]int
}

var _ DestinationObserver = (*countingObserver)(nil)

func (o *countingObserver) LatestReplaced(rule string) {
	o.mu.Lock()
	o.replaced[rule]++
	o.mu.Unlock()
}

func (o *countingObserver) SubscriberCapRefused(rule string) {
	o.mu.Lock()
	o.capRefused[rule]++
	o.mu.Unlock()
}

// count returns the count of rule in one of the observer's maps.
func (o *countingObserver) count(m map[string]int, rule string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return m[rule]
}

func (o *countingObserver) SessionOpened()               { o.mu.Lock(); o.opened++; o.mu.Unlock() }
func (o *countingObserver) Handshake(*outcome.Handshake) {}
func (o *countingObserver) SessionClosed(r *outcome.Close) {
	o.mu.Lock()
	o.closed[r.String()]++
	o.mu.Unlock()
}
func (o *countingObserver) Delivered(_ string, n int) { o.mu.Lock(); o.delivered += n; o.mu.Unlock() }
func (o *countingObserver) SlowConsumerDisconnect()   { o.mu.Lock(); o.slow++; o.mu.Unlock() }
func (o *countingObserver) ProtocolErrorClose(k string) {
	o.mu.Lock()
	o.protocol[k]++
	o.mu.Unlock()
}
func (o *countingObserver) Panic()           { o.mu.Lock(); o.panics++; o.mu.Unlock() }
func (o *countingObserver) ReaderPaused()    { o.mu.Lock(); o.paused++; o.mu.Unlock() }
func (o *countingObserver) HeartBeatCapped() { o.mu.Lock(); o.hbCapped++; o.mu.Unlock() }
func (o *countingObserver) SessionCompressed() {
	o.mu.Lock()
	o.compressed++
	o.mu.Unlock()
}

func (o *countingObserver) closedCount(reason *outcome.Close) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed[reason.String()]
}

// compressedCount returns how many sessions negotiated compression.
func (o *countingObserver) compressedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.compressed
}
