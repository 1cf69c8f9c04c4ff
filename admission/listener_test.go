package admission

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/outcome"
)

// countingObserver records a Listener's refusals and evictions.
type countingObserver struct {
	mu      sync.Mutex
	refused map[string]int
	evicted int
}

func (o *countingObserver) Refused(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refused == nil {
		o.refused = map[string]int{}
	}
	o.refused[reason]++
}

func (o *countingObserver) Evicted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evicted++
}

func (o *countingObserver) counts() (map[string]int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]int{}
	for k, v := range o.refused {
		m[k] = v
	}
	return m, o.evicted
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// listenerRig is a Listener on a loopback port with one goroutine
// accepting from it; the connections it passes on arrive on accepted.
type listenerRig struct {
	l        *Listener
	obs      *countingObserver
	clock    *testClock
	accepted chan net.Conn
}

func newListenerRig(t *testing.T, cfg ListenerConfig) *listenerRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	r := &listenerRig{obs: &countingObserver{}, clock: &testClock{now: time.Unix(1_700_000_000, 0)}, accepted: make(chan net.Conn, 64)}
	cfg.Observer = r.obs
	cfg.Now = r.clock.Now
	r.l, err = NewListener(ln, cfg)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("NewListener: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := r.l.Accept()
			if err != nil {
				return
			}
			r.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = r.l.Close()
		<-done
		for {
			select {
			case c := <-r.accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return r
}

// dial connects to the rig from the loopback address from.
func (r *listenerRig) dial(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", r.l.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// The first byte of a request: where the kernel defers accepting
	// (TCP_DEFER_ACCEPT), a connection reaches Accept with its data.
	if _, err := c.Write([]byte("G")); err != nil {
		t.Fatalf("write from %s: %v", from, err)
	}
	return c
}

// passed waits for the connection the rig passes on next, and checks it
// is client's.
func (r *listenerRig) passed(t *testing.T, client net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-r.accepted:
		t.Cleanup(func() { _ = c.Close() })
		if c.RemoteAddr().String() != client.LocalAddr().String() {
			t.Fatalf("passed on %s, want %s", c.RemoteAddr(), client.LocalAddr())
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("connection from %s was not passed on", client.LocalAddr())
		return nil
	}
}

// refused reads what the listener answered client and fails the test
// unless it is the prebuilt 503, closed after it; it returns the
// Retry-After.
func refused(t *testing.T, client net.Conn) int {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	ra := resp.Header.Get("Retry-After")
	secs, err := strconv.Atoi(ra)
	if resp.StatusCode != http.StatusServiceUnavailable || err != nil || secs < 1 ||
		!resp.Close || resp.Header.Get("Cache-Control") != "no-store" ||
		string(body) != "server busy (connections), retry after "+ra+"s\n" {
		t.Fatalf("refusal %d %v %q, want 503 with Retry-After, Connection: close, no-store", resp.StatusCode, resp.Header, body)
	}
	if n, err := client.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("after the refusal read %d bytes, %v: want the connection closed", n, err)
	}
	return secs
}

func wantRefused(t *testing.T, r *listenerRig, want map[string]int, evicted int) {
	t.Helper()
	got, ev := r.obs.counts()
	for _, reason := range outcome.ListenerReasons() {
		if got[reason] != want[reason] {
			t.Errorf("refused %s = %d, want %d (all: %v)", reason, got[reason], want[reason], got)
		}
	}
	if ev != evicted {
		t.Errorf("evicted = %d, want %d", ev, evicted)
	}
}

// Past the rate a connection is refused at accept; the bucket refills
// with the clock.
func TestListenerRate(t *testing.T) {
	r := newListenerRig(t, ListenerConfig{Rate: 2, Burst: 2})
	if runtime.GOOS == "linux" && !r.l.Deferred() {
		t.Error("TCP_DEFER_ACCEPT not set on Linux")
	}
	for range 2 {
		c := r.dial(t, "127.0.0.1")
		r.passed(t, c)
	}
	c := r.dial(t, "127.0.0.1")
	if secs := refused(t, c); secs > 2 {
		t.Errorf("Retry-After %d without a Gate, want 1 or 2", secs)
	}
	wantRefused(t, r, map[string]int{outcome.ListenerRate: 1}, 0)
	r.clock.add(500 * time.Millisecond) // one token
	c = r.dial(t, "127.0.0.1")
	r.passed(t, c)
	c = r.dial(t, "127.0.0.1")
	refused(t, c)
	wantRefused(t, r, map[string]int{outcome.ListenerRate: 2}, 0)
}

// One address passes at most RatePerAddr connections a second; its
// excess is refused without spending the bucket, so another address
// still gets in, and the address is let through again the next second.
func TestListenerRatePerAddr(t *testing.T) {
	r := newListenerRig(t, ListenerConfig{Rate: 4, Burst: 4, RatePerAddr: 2})
	for range 2 {
		r.passed(t, r.dial(t, "127.0.0.2"))
	}
	for range 3 {
		refused(t, r.dial(t, "127.0.0.2"))
	}
	wantRefused(t, r, map[string]int{outcome.ListenerRateAddr: 3}, 0)
	// The flooding address's refusals took no token: two are left.
	for range 2 {
		r.passed(t, r.dial(t, "127.0.0.3"))
	}
	r.clock.add(time.Second) // four tokens back, a new window
	r.passed(t, r.dial(t, "127.0.0.2"))
	wantRefused(t, r, map[string]int{outcome.ListenerRateAddr: 3}, 0)
}

// One address holds at most its share of the pending connections;
// another address still gets in, a connection that ends or reaches the
// handler gives its place back, and a stale one is evicted to make room.
func TestListenerPendingPerAddr(t *testing.T) {
	r := newListenerRig(t, ListenerConfig{MaxPending: 10, MaxPendingPerAddr: 2, PendingTimeout: time.Second})
	a1 := r.dial(t, "127.0.0.2")
	s1 := r.passed(t, a1)
	a2 := r.dial(t, "127.0.0.2")
	s2 := r.passed(t, a2)
	refused(t, r.dial(t, "127.0.0.2"))
	wantRefused(t, r, map[string]int{outcome.ListenerPendingAddr: 1}, 0)
	r.passed(t, r.dial(t, "127.0.0.3"))
	if got := r.l.Pending(); got != 3 {
		t.Errorf("Pending() = %d, want 3", got)
	}

	// The first one's request reaches the handler: its place is free.
	reached := false
	h := r.l.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	h.ServeHTTP(nil, &http.Request{RemoteAddr: s1.RemoteAddr().String()})
	if !reached || r.l.Pending() != 2 {
		t.Fatalf("after the handler: reached %v, Pending() = %d, want true, 2", reached, r.l.Pending())
	}
	a3 := r.dial(t, "127.0.0.2")
	r.passed(t, a3)
	refused(t, r.dial(t, "127.0.0.2"))

	// The second one closes before any request.
	r.l.ConnState(s2, http.StateClosed)
	r.passed(t, r.dial(t, "127.0.0.2"))

	// Past the timeout, a new connection of the full address evicts the
	// stale ones (every pending one here) and takes a place.
	r.clock.add(time.Second)
	a5 := r.dial(t, "127.0.0.2")
	r.passed(t, a5)
	wantRefused(t, r, map[string]int{outcome.ListenerPendingAddr: 2}, 3)
	_ = a3.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := a3.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("an evicted connection read %d bytes, %v: want it closed", n, err)
	}
	if got := r.l.Pending(); got != 1 {
		t.Errorf("Pending() = %d after the eviction, want 1", got)
	}
}

// The pending bound holds for all addresses together; a trusted proxy
// has no share of its own.
func TestListenerPendingTotal(t *testing.T) {
	r := newListenerRig(t, ListenerConfig{MaxPending: 3, MaxPendingPerAddr: 1,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")}})
	var first net.Conn
	for i := range 3 {
		c := r.dial(t, "127.0.0.4")
		s := r.passed(t, c)
		if i == 0 {
			first = s
		}
	}
	refused(t, r.dial(t, "127.0.0.5"))
	wantRefused(t, r, map[string]int{outcome.ListenerPending: 1}, 0)
	r.l.ConnState(first, http.StateHijacked)
	r.passed(t, r.dial(t, "127.0.0.5"))
}

// With a Gate, a refusal's Retry-After comes from its schedule and the
// refused client counts in its backlog.
func TestListenerRetryAfterFromGate(t *testing.T) {
	g, err := New(Config{Rate: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := newListenerRig(t, ListenerConfig{Rate: 1, Burst: 1, Gate: g})
	r.passed(t, r.dial(t, "127.0.0.1"))
	for range 3 {
		if secs := refused(t, r.dial(t, "127.0.0.1")); secs < 1 || secs > int(DefaultRetryAfterMax/time.Second) {
			t.Errorf("Retry-After %d, want within [1, %v]", secs, DefaultRetryAfterMax)
		}
	}
	if got := g.StateAt(r.clock.Now()).Backlog; got != 3 {
		t.Errorf("gate backlog = %d, want the 3 refused clients", got)
	}
}

// One address's own excess is told 1 to 2 s and kept out of the Gate's
// schedule: a flood refused as fast as it connects does not push the
// other clients' Retry-After out.
func TestListenerPerAddrRetryAfterOutsideGate(t *testing.T) {
	g, err := New(Config{Rate: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := newListenerRig(t, ListenerConfig{Rate: 100, Burst: 100, RatePerAddr: 1, Gate: g})
	r.passed(t, r.dial(t, "127.0.0.2"))
	for range 20 {
		if secs := refused(t, r.dial(t, "127.0.0.2")); secs > 2 {
			t.Fatalf("Retry-After %d for one address's excess, want 1 or 2", secs)
		}
	}
	wantRefused(t, r, map[string]int{outcome.ListenerRateAddr: 20}, 0)
	if got := g.StateAt(r.clock.Now()).Backlog; got != 0 {
		t.Errorf("gate backlog = %d after one address's refusals, want 0", got)
	}
}

// NoResponse closes a refused connection without a word.
func TestListenerNoResponse(t *testing.T) {
	r := newListenerRig(t, ListenerConfig{Rate: 1, Burst: 1, NoResponse: true})
	r.passed(t, r.dial(t, "127.0.0.1"))
	c := r.dial(t, "127.0.0.1")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) != 0 || (err != nil && errors.Is(err, io.ErrUnexpectedEOF)) {
		t.Errorf("read %q, %v: want nothing before the close", b, err)
	}
	wantRefused(t, r, map[string]int{outcome.ListenerRate: 1}, 0)
}

func TestListenerConfigErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		cfg  ListenerConfig
		name string
	}{
		{ListenerConfig{Rate: -1}, "Rate"},
		{ListenerConfig{Burst: -1}, "Burst"},
		{ListenerConfig{MaxPending: -1}, "MaxPending"},
		{ListenerConfig{MaxPendingPerAddr: -1}, "MaxPendingPerAddr"},
		{ListenerConfig{PendingTimeout: -time.Second}, "PendingTimeout"},
		{ListenerConfig{IPv6Prefix: 129}, "IPv6Prefix"},
	} {
		_, err := NewListener(ln, c.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "ListenerConfig."+c.name+" ") {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", c.cfg, err, c.name)
		}
	}
	l, err := NewListener(ln, ListenerConfig{Rate: 500})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Config(); c.Burst != 50 || c.PendingTimeout != DefaultPendingTimeout || c.IPv6Prefix != 64 {
		t.Errorf("defaults %+v, want burst 50, timeout %v, /64", c, DefaultPendingTimeout)
	}
}

// IPv6 addresses share their /64 (IPv6Prefix).
func TestListenerKey(t *testing.T) {
	l := &Listener{cfg: ListenerConfig{IPv6Prefix: 64, MaxPendingPerAddr: 1}, perAddr: true}
	a := l.key(netip.MustParseAddr("2001:db8:1:2::1"))
	b := l.key(netip.MustParseAddr("2001:db8:1:2:ffff::9"))
	c := l.key(netip.MustParseAddr("::ffff:10.0.0.1"))
	if a != b || a.Bits() != 64 {
		t.Errorf("keys %v and %v, want one /64", a, b)
	}
	if c != netip.MustParsePrefix("10.0.0.1/32") {
		t.Errorf("IPv4-mapped key %v, want 10.0.0.1/32", c)
	}
}

// The queue of pending connections keeps no more than a bounded
// multiple of the pending ones, even behind one that never reports.
func TestListenerQueueBounded(t *testing.T) {
	l := &Listener{cfg: ListenerConfig{MaxPending: 1 << 20, PendingTimeout: time.Hour, Now: time.Now},
		track: true, pending: map[netip.AddrPort]*pend{}, byAddr: map[netip.Prefix]int{}}
	stuck := fakeConn{remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}}
	if r, _ := l.admit(stuck); r != "" {
		t.Fatalf("refused %s", r)
	}
	for i := range 10_000 {
		c := fakeConn{remote: &net.TCPAddr{IP: net.IPv4(10, 0, 1, byte(i%200)), Port: 1000 + i}}
		if r, _ := l.admit(c); r != "" {
			t.Fatalf("refused %s", r)
		}
		l.release(addrPort(c.remote))
	}
	if got := l.Pending(); got != 1 {
		t.Errorf("Pending() = %d, want the stuck one", got)
	}
	if n := len(l.queue) - l.head; n > 2*1+64+1 {
		t.Errorf("queue holds %d entries for 1 pending connection", n)
	}
}

// fakeConn is a net.Conn with a remote address and nothing else.
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
