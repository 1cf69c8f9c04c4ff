package admission

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/stompgate/stompgate/internal/retryafter"
	"github.com/stompgate/stompgate/outcome"
)

// DefaultPendingTimeout is the default ListenerConfig.PendingTimeout: a
// connection that has not sent its request's headers two seconds after
// it was accepted may be closed to make room for another while the
// pending bound is full. A client on a 500 ms round trip has sent them
// by then, TLS included; a client that sends nothing holds a place no
// longer.
const DefaultPendingTimeout = 2 * time.Second

// MaxRateAddrs bounds the addresses a Listener counts for
// ListenerConfig.RatePerAddr in one second: 65,536 windows of a few
// words, a few MiB at most, whatever the addresses a flood claims.
const MaxRateAddrs = 1 << 16

// ListenerConfig configures a Listener. The zero value bounds nothing:
// each bound is off until set.
type ListenerConfig struct {
	// Rate is the connections per second passed on to the HTTP server
	// (a token bucket refilled at Rate); a connection accepted past it is
	// refused at once (see Listener). Zero means no rate bound; negative
	// is an error.
	Rate float64
	// Burst is the bucket's size: connections passed on at once after a
	// quiet spell. Zero means a tenth of a second of Rate, at least 1.
	// Negative is an error. Unused without Rate.
	Burst int
	// MaxPending is the most connections passed on and not yet past
	// their first request's headers (Listener.Handler) or closed. Zero
	// means no bound; negative is an error.
	MaxPending int
	// MaxPendingPerAddr is the most of those one client address holds
	// (IPv6 addresses keyed by IPv6Prefix), so that one address holding
	// connections open without a request cannot take the others'
	// places. Zero means no bound; negative is an error. Addresses in
	// TrustedProxies are not bounded by it (a proxy carries everyone's
	// connections).
	MaxPendingPerAddr int
	// RatePerAddr is the most connections one client address (keyed as
	// for MaxPendingPerAddr; TrustedProxies exempt) passes on in one
	// second; more are refused at once without spending Rate, so that
	// one address opening connections as fast as it can cannot empty
	// the bucket for everyone else. Zero means no per-address bound;
	// negative is an error. At most MaxRateAddrs addresses are counted
	// at once: past them a new address is bounded by Rate alone.
	RatePerAddr int
	// PendingTimeout is how long a pending connection keeps its place
	// while others wait for one: a new connection that finds a bound
	// full first closes the pending connections older than this. Zero
	// means DefaultPendingTimeout; negative is an error.
	PendingTimeout time.Duration
	// IPv6Prefix is the prefix length by which IPv6 addresses are keyed
	// for MaxPendingPerAddr: one host holds a whole /64. Zero means 64;
	// outside [1, 128] is an error. IPv4 is keyed by address.
	IPv6Prefix int
	// TrustedProxies are the addresses of proxies in front of the
	// instance, exempt from MaxPendingPerAddr. Nil: none.
	TrustedProxies []netip.Prefix
	// Gate, if not nil, draws the Retry-After of each refusal from its
	// schedule, where the refused clients count in the backlog like the
	// ones the Gate refuses itself, so that both come back spread at the
	// admission rate. Nil: a Retry-After drawn uniformly over 1 to 2 s
	// (retryafter.Between).
	Gate *Gate
	// NoResponse closes a refused connection without an answer: for a
	// listener whose connections speak TLS, where a plain HTTP response
	// would be garbage to the client. The client sees a failed connection
	// and backs off on its own schedule.
	NoResponse bool
	// Observer, if not nil, is told of each refusal and eviction.
	Observer ListenerObserver
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Rand returns uniform values in [0, 1) for the Retry-After without a
	// Gate. Nil means math/rand/v2's Float64.
	Rand func() float64
}

// ListenerObserver is told what a Listener refused and evicted. Its
// methods are called on the accepting goroutine and must not block.
type ListenerObserver interface {
	// Refused counts a connection refused at accept, by reason
	// (outcome.Listener*).
	Refused(reason string)
	// Evicted counts a pending connection closed past
	// ListenerConfig.PendingTimeout to make room for a new one.
	Evicted()
}

// Listener wraps the public listener so that, when the instance is
// saturated with new connections, refusing one costs an accept, a write
// and a close: no goroutine, no buffers, no HTTP request read or
// parsed. A connection accepted past the rate, or while the pending
// bound or its address's share of it is full, is answered straight on
// the socket, before net/http sees it, with a response built in
// advance:
//
//	HTTP/1.1 503 Service Unavailable
//	Retry-After: <whole seconds>
//	Cache-Control: no-store
//	Connection: close
//	Content-Type: text/plain; charset=utf-8
//	Content-Length: <n>
//
//	server busy (connections), retry after <seconds>s
//
// and closed (ListenerConfig.NoResponse: closed without it). The
// request is not read: when it had arrived, the close resets the
// connection after the response, which a client reads first. Its
// Retry-After comes from the Gate's schedule (ListenerConfig.Gate).
//
// A connection is pending from its accept until its first request
// reaches the handler (Handler), or it closes or is hijacked
// (ConnState). Wire both: a connection never reported stays pending
// until it is evicted past PendingTimeout.
//
// The zero Listener is not usable; call NewListener. Accept may be
// called from several goroutines, as may Handler's and ConnState's
// reports: one mutex guards the bucket and the pending connections.
type Listener struct {
	net.Listener
	cfg     ListenerConfig
	burst   float64
	perAddr bool     // the per-address share or rate is tracked
	track   bool     // pending connections are tracked at all
	busy    [][]byte // prebuilt refusals, by Retry-After seconds (index 0 unused)
	// deferred is whether the kernel hands connections over only once
	// their first bytes arrived (deferAccept).
	deferred bool

	mu      sync.Mutex // guards everything below
	tokens  float64
	last    time.Time                // when tokens was last refilled; zero: full bucket
	pending map[netip.AddrPort]*pend // by remote address: unique among live connections
	byAddr  map[netip.Prefix]int     // pending connections per address key
	queue   []*pend                  // pending in accept order; done ones skipped
	head    int                      // queue[head:] is live
	// rateAddr counts each address's connections in its current
	// one-second window (RatePerAddr); nil without that bound.
	rateAddr map[netip.Prefix]*addrWindow
	sweptAt  time.Time // when rateAddr was last swept of ended windows
}

// addrWindow is one address's count of connections passed on since
// start.
type addrWindow struct {
	start time.Time
	n     int
}

// pend is one pending connection.
type pend struct {
	conn net.Conn
	key  netip.Prefix // the per-address key; invalid when exempt or untracked
	at   time.Time
	done bool // released: decided, closed or evicted
}

// NewListener wraps ln with the bounds of cfg, defaults filled in on a
// copy.
func NewListener(ln net.Listener, cfg ListenerConfig) (*Listener, error) {
	switch {
	case ln == nil:
		return nil, configErrorf("NewListener: listener is nil")
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return nil, configErrorf("ListenerConfig.Rate %v is not a rate (want 0 or more per second)", cfg.Rate)
	case cfg.Burst < 0:
		return nil, configErrorf("ListenerConfig.Burst %d is negative", cfg.Burst)
	case cfg.MaxPending < 0:
		return nil, configErrorf("ListenerConfig.MaxPending %d is negative", cfg.MaxPending)
	case cfg.MaxPendingPerAddr < 0:
		return nil, configErrorf("ListenerConfig.MaxPendingPerAddr %d is negative", cfg.MaxPendingPerAddr)
	case cfg.RatePerAddr < 0:
		return nil, configErrorf("ListenerConfig.RatePerAddr %d is negative", cfg.RatePerAddr)
	case cfg.PendingTimeout < 0:
		return nil, configErrorf("ListenerConfig.PendingTimeout %v is negative", cfg.PendingTimeout)
	case cfg.IPv6Prefix < 0 || cfg.IPv6Prefix > 128:
		return nil, configErrorf("ListenerConfig.IPv6Prefix %d is not in [1, 128]", cfg.IPv6Prefix)
	}
	if cfg.Burst == 0 {
		cfg.Burst = max(int(math.Ceil(cfg.Rate/10)), 1)
	}
	if cfg.PendingTimeout == 0 {
		cfg.PendingTimeout = DefaultPendingTimeout
	}
	if cfg.IPv6Prefix == 0 {
		cfg.IPv6Prefix = 64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Listener{
		Listener: ln,
		cfg:      cfg,
		burst:    float64(cfg.Burst),
		tokens:   float64(cfg.Burst),
		perAddr:  cfg.MaxPendingPerAddr > 0 || cfg.RatePerAddr > 0,
		track:    cfg.MaxPending > 0 || cfg.MaxPendingPerAddr > 0,
	}
	if cfg.Rate > 0 || l.track {
		l.deferred = deferAccept(ln, cfg.PendingTimeout)
	}
	if l.track {
		l.pending = make(map[netip.AddrPort]*pend)
		l.byAddr = make(map[netip.Prefix]int)
	}
	if cfg.RatePerAddr > 0 {
		l.rateAddr = make(map[netip.Prefix]*addrWindow)
	}
	maxSecs := int64(1)
	if cfg.Gate != nil {
		maxSecs = int64((cfg.Gate.cfg.RetryAfterMax + time.Second - 1) / time.Second)
	}
	l.busy = make([][]byte, maxSecs+2)
	for s := int64(1); s < int64(len(l.busy)); s++ {
		l.busy[s] = busyResponse(s)
	}
	return l, nil
}

// Config returns the configuration with its defaults filled in.
func (l *Listener) Config() ListenerConfig { return l.cfg }

// Deferred reports whether the kernel hands the listener's connections
// over only once their first bytes arrived (Linux's TCP_DEFER_ACCEPT,
// set by NewListener when a bound is on), so that a refusal answers a
// request already sent.
func (l *Listener) Deferred() bool { return l.deferred }

// busyResponse is the whole refusal announcing secs.
func busyResponse(secs int64) []byte {
	s := retryafter.Header(secs)
	body := "server busy (connections), retry after " + s + "s\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Retry-After: " + s + "\r\n" +
		"Cache-Control: no-store\r\n" +
		"Connection: close\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// Accept returns the next connection within the bounds, refusing the
// ones past them on the way (see Listener).
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		reason, evicted := l.admit(c)
		for _, e := range evicted {
			_ = e.Close()
			if l.cfg.Observer != nil {
				l.cfg.Observer.Evicted()
			}
		}
		if reason == "" {
			return c, nil
		}
		l.refuse(c, reason)
	}
}

// admit decides on c, tracking it as pending when it passes, and
// returns the connections evicted to make room (closed by the caller,
// outside the lock).
func (l *Listener) admit(c net.Conn) (reason string, evicted []net.Conn) {
	now := l.cfg.Now()
	var ap netip.AddrPort
	var key netip.Prefix
	if l.track || l.rateAddr != nil {
		ap = addrPort(c.RemoteAddr())
		key = l.key(ap.Addr())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.track {
		full := func() bool {
			return (l.cfg.MaxPending > 0 && len(l.pending) >= l.cfg.MaxPending) ||
				(key.IsValid() && l.cfg.MaxPendingPerAddr > 0 && l.byAddr[key] >= l.cfg.MaxPendingPerAddr)
		}
		if full() {
			evicted = l.evictLocked(now)
		}
		switch {
		case l.cfg.MaxPending > 0 && len(l.pending) >= l.cfg.MaxPending:
			return outcome.ListenerPending, evicted
		case key.IsValid() && l.cfg.MaxPendingPerAddr > 0 && l.byAddr[key] >= l.cfg.MaxPendingPerAddr:
			return outcome.ListenerPendingAddr, evicted
		}
	}
	// One address's excess is refused before it spends the bucket.
	w := l.rateWindowLocked(key, now)
	if w != nil && w.n >= l.cfg.RatePerAddr {
		return outcome.ListenerRateAddr, evicted
	}
	if l.cfg.Rate > 0 {
		l.refillLocked(now)
		if l.tokens < 1 {
			return outcome.ListenerRate, evicted
		}
		l.tokens--
	}
	if w != nil {
		w.n++
	}
	if l.track && ap.IsValid() {
		if old := l.pending[ap]; old != nil {
			// The address and port of a connection that closed unseen:
			// its place is this one's now.
			l.releaseLocked(old)
		}
		p := &pend{conn: c, key: key, at: now}
		l.pending[ap] = p
		if key.IsValid() {
			l.byAddr[key]++
		}
		l.queue = append(l.queue, p)
		l.compactLocked()
	}
	return "", evicted
}

// rateWindowLocked returns key's window of RatePerAddr at now, a new
// one when its second is over; nil when the bound is off, key is
// exempt, or MaxRateAddrs addresses are counted in live windows.
func (l *Listener) rateWindowLocked(key netip.Prefix, now time.Time) *addrWindow {
	if l.rateAddr == nil || !key.IsValid() {
		return nil
	}
	w := l.rateAddr[key]
	if w == nil {
		if len(l.rateAddr) >= MaxRateAddrs {
			// Sweep at most once a second, so that a flood of new
			// addresses into a full table costs no sweep per accept.
			if now.Sub(l.sweptAt) < time.Second {
				return nil
			}
			l.sweptAt = now
			for k, old := range l.rateAddr {
				if now.Sub(old.start) >= time.Second {
					delete(l.rateAddr, k)
				}
			}
			if len(l.rateAddr) >= MaxRateAddrs {
				return nil
			}
		}
		w = &addrWindow{start: now}
		l.rateAddr[key] = w
	}
	if now.Sub(w.start) >= time.Second {
		w.start, w.n = now, 0
	}
	return w
}

// key is the per-address key of a, or an invalid prefix when a is not
// bounded per address (no share, a trusted proxy, no address).
func (l *Listener) key(a netip.Addr) netip.Prefix {
	if !l.perAddr || !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap()
	for _, p := range l.cfg.TrustedProxies {
		if p.Contains(a) {
			return netip.Prefix{}
		}
	}
	bits := 32
	if a.Is6() {
		bits = l.cfg.IPv6Prefix
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// evictLocked releases the pending connections older than
// PendingTimeout, the oldest first, and returns them to be closed.
func (l *Listener) evictLocked(now time.Time) []net.Conn {
	var out []net.Conn
	for l.head < len(l.queue) {
		p := l.queue[l.head]
		if !p.done && now.Sub(p.at) < l.cfg.PendingTimeout {
			break
		}
		l.queue[l.head] = nil
		l.head++
		if !p.done {
			l.releaseLocked(p)
			out = append(out, p.conn)
		}
	}
	l.compactLocked()
	return out
}

// compactLocked drops the released head of the queue once it is most of
// it, and the released entries behind a pending head once they are most
// of the queue (a slow connection at the head would otherwise keep
// every later one), so that the queue's memory follows the pending
// connections: amortized O(1) per connection.
func (l *Listener) compactLocked() {
	switch {
	case l.head > 64 && l.head*2 >= len(l.queue):
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue = l.queue[:n]
		l.head = 0
	case len(l.queue)-l.head > 2*len(l.pending)+64:
		live := l.queue[:0]
		for _, p := range l.queue[l.head:] {
			if !p.done {
				live = append(live, p)
			}
		}
		clear(l.queue[len(live):])
		l.queue = live
		l.head = 0
	}
}

// releaseLocked gives back p's places.
func (l *Listener) releaseLocked(p *pend) {
	if p.done {
		return
	}
	p.done = true
	ap := addrPort(p.conn.RemoteAddr())
	if l.pending[ap] == p {
		delete(l.pending, ap)
	}
	if p.key.IsValid() {
		if n := l.byAddr[p.key] - 1; n > 0 {
			l.byAddr[p.key] = n
		} else {
			delete(l.byAddr, p.key)
		}
	}
	// Released entries at the head are dropped lazily.
	for l.head < len(l.queue) && l.queue[l.head].done {
		l.queue[l.head] = nil
		l.head++
	}
	l.compactLocked()
}

// release ends the pending state of the connection from remote, if it
// is pending.
func (l *Listener) release(remote netip.AddrPort) {
	if !l.track || !remote.IsValid() {
		return
	}
	l.mu.Lock()
	if p := l.pending[remote]; p != nil {
		l.releaseLocked(p)
	}
	l.mu.Unlock()
}

// Pending returns the connections pending now.
func (l *Listener) Pending() int {
	if !l.track {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// Handler returns next wrapped so that a request reaching it ends its
// connection's pending state: its headers were read, and the admission
// (or whatever handles it) decides now.
func (l *Listener) Handler(next http.Handler) http.Handler {
	if !l.track {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			l.release(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
		next.ServeHTTP(w, r)
	})
}

// ConnState ends the pending state of a connection that closes or is
// hijacked before its first request reached the handler. Call it from
// the http.Server's ConnState.
func (l *Listener) ConnState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		l.release(addrPort(c.RemoteAddr()))
	}
}

// refillLocked adds the tokens accrued since the last refill, up to the
// burst. A clock stepped back adds nothing.
func (l *Listener) refillLocked(now time.Time) {
	if !l.last.IsZero() {
		if dt := now.Sub(l.last); dt > 0 {
			l.tokens = min(l.burst, l.tokens+dt.Seconds()*l.cfg.Rate)
		}
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
}

// refuse answers c with the prebuilt refusal and closes it.
func (l *Listener) refuse(c net.Conn, reason string) {
	if l.cfg.Observer != nil {
		l.cfg.Observer.Refused(reason)
	}
	if !l.cfg.NoResponse {
		// A fresh socket's send buffer takes the few hundred bytes
		// whole: the write does not wait.
		_, _ = c.Write(l.response(reason))
	}
	_ = c.Close()
}

// response returns the refusal to write for reason. An instance-wide
// refusal draws its Retry-After from the Gate's schedule; one address's
// own excess (ListenerRateAddr, ListenerPendingAddr), or any refusal
// without a Gate, gets 1 to 2 s: a flooding address, refused as fast as
// it connects, would otherwise fill the schedule and push every other
// client's Retry-After out.
func (l *Listener) response(reason string) []byte {
	var secs int64
	perAddr := reason == outcome.ListenerRateAddr || reason == outcome.ListenerPendingAddr
	if l.cfg.Gate != nil && !perAddr {
		secs = retryafter.Seconds(l.cfg.Gate.shedRetryAfter(l.cfg.Now()))
	} else {
		secs = retryafter.Between(1, 2, l.cfg.Rand)
	}
	return l.busy[min(max(secs, 1), int64(len(l.busy)-1))]
}

// addrPort is a's address and port, or the zero AddrPort when a is not
// an IP address.
func addrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case nil:
		return netip.AddrPort{}
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	// net.TCPAddr holds IPv4 in 16 bytes; a request's RemoteAddr is text.
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// shedRetryAfter draws the Retry-After of a connection the Listener
// refused at now, from the same schedule as the Gate's own refusals (no
// earlier than the bucket's next token), and counts it in the backlog.
func (g *Gate) shedRetryAfter(now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refill(now)
	return g.retryAfterLocked(now)
}
