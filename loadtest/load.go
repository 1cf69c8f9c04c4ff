package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/stompgate/stompgate/loadtest/internal/report"

	"github.com/stompgate/stompgate/loadtest/internal/client"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/stompframe"
)

// Publisher pacing: a publisher wakes once per period and sends every
// frame that is due, in one WebSocket message. One timer per message would
// cost a wake-up per message; these bounds keep wake-ups to at most 100
// per second per publisher while a 1.3/s user still sends one frame per
// tick.
const (
	minPeriod = 10 * time.Millisecond
	maxPeriod = time.Second
)

// pacePeriod is a publisher's tick for rate messages per second.
func pacePeriod(rate float64) time.Duration {
	p := time.Duration(float64(time.Second) / rate)
	return min(max(p, minPeriod), maxPeriod)
}

// due is how many frames a publisher at rate per second should have sent
// after elapsed, minus the sent it has.
func due(rate float64, elapsed time.Duration, sent int64) int64 {
	return max(int64(rate*elapsed.Seconds())-sent, 0)
}

// bursts is a publisher's on-off pattern: it sends during the first on
// of every every, and is silent the rest. The zero value is always on.
type bursts struct {
	every, on time.Duration
}

// active is how long the pattern was on during the first elapsed.
func (b bursts) active(elapsed time.Duration) time.Duration {
	if b.every <= 0 {
		return elapsed
	}
	return elapsed/b.every*b.on + min(elapsed%b.every, b.on)
}

// clock is the run's time base: stamps are nanoseconds since base,
// monotonic.
type clock struct{ base time.Time }

func (c clock) now() int64 { return int64(time.Since(c.base)) }

// publisher sends SEND frames to one destination from one session.
type publisher struct {
	conn   *client.Conn
	cls    *class
	idx    uint32
	prefix []byte // command and headers of every SEND, up to the blank line
	pad    []byte // body padding after the stamp
	// perMessage bounds the frames of one WebSocket message (0: as many
	// as fit in maxBatchBytes).
	perMessage int64
	// bursts, set before a paced run, makes it send only in bursts.
	bursts bursts
	sent   int64 // owned by the run goroutine; read after it ends
}

func newPublisher(conn *client.Conn, cls *class, idx uint32, dest string, size int) *publisher {
	bodyLen := max(size, stampLen)
	b := append([]byte(nil), "SEND\n"...)
	b = stompframe.AppendHeader(b, "destination", dest, conn.Version)
	b = stompframe.AppendContentLength(b, bodyLen)
	b = append(b, '\n')
	pad := make([]byte, bodyLen-stampLen)
	for i := range pad {
		pad[i] = 'x'
	}
	return &publisher{conn: conn, cls: cls, idx: idx, prefix: b, pad: pad}
}

// frameLen is the wire size of one SEND frame.
func (p *publisher) frameLen() int { return len(p.prefix) + stampLen + len(p.pad) + 1 }

// maxBatch is how many frames fit in one WebSocket message.
func (p *publisher) maxBatch() int64 {
	n := int64(max(client.MaxBatchBytes/p.frameLen(), 1))
	if p.perMessage > 0 {
		n = min(n, p.perMessage)
	}
	return n
}

// sendBatch writes n SEND frames stamped now in one WebSocket message.
func (p *publisher) sendBatch(ck clock, n int64) error {
	b := p.conn.WriteBuf[:0]
	ns := ck.now()
	for range n {
		b = append(b, p.prefix...)
		b = appendStamp(b, ns, p.idx)
		b = append(b, p.pad...)
		b = append(b, 0)
	}
	p.conn.WriteBuf = b
	if err := p.conn.Write(context.Background(), b); err != nil {
		return err
	}
	p.sent += n
	p.cls.sent.Add(n)
	return nil
}

// runPaced sends at rate per second from start until end or ctx ends,
// ticking every pacePeriod(rate) with a random phase so that publishers
// do not all wake together.
func (p *publisher) runPaced(ctx context.Context, ck clock, start, end time.Time, rate float64) {
	period := pacePeriod(rate)
	phase := time.Duration(rand.Int64N(int64(period)))
	t := time.NewTimer(time.Until(start.Add(phase)))
	defer t.Stop()
	maxN := p.maxBatch()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if now.After(end) {
			now = end
		}
		for n := due(rate, p.bursts.active(now.Sub(start)), p.sent); n > 0; n -= min(n, maxN) {
			if err := p.sendBatch(ck, min(n, maxN)); err != nil {
				p.cls.errors.Add(1)
				return
			}
		}
		if !now.Before(end) {
			return
		}
		// Wake at the next tick, or at the end to send the last frames due.
		t.Reset(min(period-time.Since(start.Add(phase))%period, time.Until(end)))
	}
}

// runUnpaced sends as fast as the window lets it until end or ctx ends.
func (p *publisher) runUnpaced(ctx context.Context, ck clock, end time.Time, w *window) {
	maxN := p.maxBatch()
	for ctx.Err() == nil && time.Now().Before(end) {
		n := w.acquire(maxN)
		if n == 0 {
			return
		}
		if err := p.sendBatch(ck, n); err != nil {
			p.cls.errors.Add(1)
			return
		}
	}
}

// subscriber reads MESSAGE frames of one subscription on its own
// session, counting them and recording latency.
type subscriber struct {
	conn      *client.Conn
	cls       *class
	win       *window // nil unless publishers are paced by deliveries
	delivered atomic.Int64
	// hist is owned by the read goroutine until it ends; nil when
	// latency is not recorded.
	hist *hdrhistogram.Histogram

	// Set before run starts (the abuse scenario's honest subscribers):
	// readBPS paces reading to that many bytes per second, a client on a
	// slow link (0: as fast as possible); browser fails the connection on
	// a text message that is not valid UTF-8, as a browser does;
	// stampedOnly counts MESSAGEs without a stamp in foreign instead of
	// delivered.
	readBPS     int64
	browser     bool
	stampedOnly bool
	foreign     atomic.Int64

	// ended says how the connection ended before the run did, and
	// lastError is the message of the last ERROR frame. Both are written
	// by the read goroutine before it sets gone.
	ended     string
	lastError string
	gone      atomic.Bool
}

// fail records why the connection ended, once.
func (s *subscriber) fail(why string) {
	s.cls.errors.Add(1)
	s.ended = why
	s.gone.Store(true)
}

// run reads until the connection fails or closes. done reports whether
// the run is over, so that the close it causes is not an error.
func (s *subscriber) run(ck clock, done *atomic.Bool) {
	var pace *readPacer
	if s.readBPS > 0 {
		pace = &readPacer{bps: s.readBPS, start: time.Now()}
	}
	for {
		msg, err := s.conn.ReadMessage(context.Background())
		if err != nil {
			if !done.Load() {
				s.fail(describeEnd(err))
			}
			return
		}
		now := ck.now()
		if s.browser && s.conn.LastType == websocket.MessageText && !utf8.Valid(msg) {
			s.fail(endInvalidUTF8)
			s.conn.Close()
			return
		}
		s.conn.Decoder.Feed(msg)
		var n int64
		for {
			f, err := s.conn.Decoder.Next()
			if err != nil {
				s.fail("undecodable frame: " + err.Error())
				s.conn.Close()
				return
			}
			if f == nil {
				break
			}
			switch f.Command {
			case stompframe.CommandMessage:
				if s.stampedOnly {
					if _, _, ok := parseStamp(f.Body); !ok {
						s.foreign.Add(1)
						continue
					}
				}
				n++
				if s.hist != nil {
					if ts, _, ok := parseStamp(f.Body); ok {
						report.RecordMicros(s.hist, (now-ts)/1000)
					}
				}
			case stompframe.CommandError:
				s.cls.errors.Add(1)
				s.lastError = f.Get("message")
			}
		}
		if pace != nil {
			pace.wait(len(msg))
		}
		if n > 0 {
			s.delivered.Add(n)
			s.cls.delivered.Add(n)
			if s.win != nil {
				s.win.release(n)
			}
		}
	}
}

// window bounds the deliveries outstanding for unpaced publishers, so
// that "as fast as possible" measures the server's throughput instead of
// filling its per-session outbound queues until it closes subscribers as
// slow consumers. Credits are deliveries: a sent message takes fanout.
// Deliveries that never come (a server that drops) would shrink the window
// for good, so tick forgives the outstanding count when publishers have
// waited a whole tick without any delivery.
type window struct {
	fanout int64
	limit  int64

	mu sync.Mutex
	// Guarded by mu:
	cond     sync.Cond
	inflight int64
	waiting  int
	released bool // some delivery since the last tick
	closed   bool
}

func newWindow(perSubscriber, fanout int64) *window {
	w := &window{fanout: fanout, limit: perSubscriber * fanout}
	w.cond.L = &w.mu
	return w
}

// acquire reserves up to max messages and returns how many; it blocks
// while the window is full and returns 0 once closed.
func (w *window) acquire(max int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.closed {
		if free := (w.limit - w.inflight) / w.fanout; free > 0 {
			n := min(free, max)
			w.inflight += n * w.fanout
			return n
		}
		w.waiting++
		w.cond.Wait()
		w.waiting--
	}
	return 0
}

// release returns n deliveries' worth of credit.
func (w *window) release(n int64) {
	w.mu.Lock()
	w.inflight = max(w.inflight-n, 0)
	w.released = true
	if w.waiting > 0 {
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

// tick is called once a second: it forgives lost deliveries when
// publishers waited a whole second for nothing.
func (w *window) tick() {
	w.mu.Lock()
	if w.waiting > 0 && !w.released {
		w.inflight = 0
		w.cond.Broadcast()
	}
	w.released = false
	w.mu.Unlock()
}

// close wakes every waiting publisher for good.
func (w *window) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
}
