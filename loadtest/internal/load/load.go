package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/report"
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

// PacePeriod is a publisher's tick for rate messages per second.
func PacePeriod(rate float64) time.Duration {
	p := time.Duration(float64(time.Second) / rate)
	return min(max(p, minPeriod), maxPeriod)
}

// Due is how many frames a publisher at rate per second should have sent
// after elapsed, minus the sent it has.
func Due(rate float64, elapsed time.Duration, sent int64) int64 {
	return max(int64(rate*elapsed.Seconds())-sent, 0)
}

// Bursts is a publisher's on-off pattern: it sends during the first on
// of every every, and is silent the rest. The zero value is always on.
type Bursts struct {
	Every, On time.Duration
}

// active is how long the pattern was on during the first elapsed.
func (b Bursts) active(elapsed time.Duration) time.Duration {
	if b.Every <= 0 {
		return elapsed
	}
	return elapsed/b.Every*b.On + min(elapsed%b.Every, b.On)
}

// Clock is the run's time base: stamps are nanoseconds since base,
// monotonic.
type Clock struct{ Base time.Time }

func (c Clock) now() int64 { return int64(time.Since(c.Base)) }

// Publisher sends SEND frames to one destination from one session.
type Publisher struct {
	conn   *client.Conn
	Class  *Class // counts what it sends
	idx    uint32
	prefix []byte // command and headers of every SEND, up to the blank line
	pad    []byte // body padding after the stamp
	// PerMessage bounds the frames of one WebSocket message (0: as many
	// as fit in maxBatchBytes).
	PerMessage int64
	// Bursts, set before a paced run, makes it send only in bursts.
	Bursts Bursts
	// Pads, set before a run, are paddings (each as long as the one
	// NewPublisher makes) that successive messages cycle through
	// instead of 'x's; see Paddings.
	Pads [][]byte
	Sent int64 // owned by the run goroutine; read after it ends
	// Late, set before a paced run, records how late each of the
	// publisher's timer wake-ups was, in µs: the tool's own lateness,
	// which delays sends but not latencies (stamps are taken when a
	// frame is written). Owned by the run goroutine.
	Late *hdrhistogram.Histogram
	// Write, set before a run, records how long each message took from
	// its stamp until the write returned, in µs: the tool's own share
	// of the server part (on loopback the write also carries the bytes
	// into the server's socket). Owned by the run goroutine.
	Write *hdrhistogram.Histogram
	// centrifugo: the frames are Centrifugo publish commands, each with
	// the id nextID (prefix is then what follows the id).
	centrifugo bool
	nextID     uint64
}

// NewPublisher returns a publisher of size-byte bodies (at least a
// stamp) to dest on conn, counted in cls; idx tells its stamps apart.
func NewPublisher(conn *client.Conn, cls *Class, idx uint32, dest string, size int) *Publisher {
	bodyLen := max(size, StampLen)
	if conn.Proto == client.Centrifugo {
		return newCentrifugoPublisher(conn, cls, idx, dest, bodyLen)
	}
	b := append([]byte(nil), "SEND\n"...)
	b = stompframe.AppendHeader(b, "destination", dest, conn.Version)
	b = stompframe.AppendContentLength(b, bodyLen)
	b = append(b, '\n')
	pad := make([]byte, bodyLen-StampLen)
	for i := range pad {
		pad[i] = 'x'
	}
	return &Publisher{conn: conn, Class: cls, idx: idx, prefix: b, pad: pad}
}

// frameLen is the wire size of one SEND frame.
func (p *Publisher) frameLen() int { return len(p.prefix) + StampLen + len(p.pad) + p.extraLen() }

// maxBatch is how many frames fit in one WebSocket message.
func (p *Publisher) maxBatch() int64 {
	n := int64(max(client.MaxBatchBytes/p.frameLen(), 1))
	if p.PerMessage > 0 {
		n = min(n, p.PerMessage)
	}
	return n
}

// sendBatch writes n SEND frames stamped now in one WebSocket message.
func (p *Publisher) sendBatch(ck Clock, n int64) error {
	b := p.conn.WriteBuf[:0]
	ns := ck.now()
	for i := range n {
		b = p.appendHead(b, i)
		b = appendStamp(b, ns, p.idx)
		if len(p.Pads) > 0 {
			// Each publisher walks the paddings from its own place.
			k := (uint64(p.idx)*2654435761 + uint64(p.Sent+i)) % uint64(len(p.Pads))
			b = append(b, p.Pads[k]...)
		} else {
			b = append(b, p.pad...)
		}
		b = p.appendTail(b)
	}
	p.conn.WriteBuf = b
	if err := p.conn.Write(context.Background(), b); err != nil {
		return err
	}
	if p.Write != nil {
		report.RecordMicros(p.Write, (ck.now()-ns)/1000)
	}
	p.Sent += n
	p.Class.Sent.Add(n)
	return nil
}

// RunPaced sends at rate per second from start until end or ctx ends,
// ticking every pacePeriod(rate) with a random phase so that publishers
// do not all wake together.
func (p *Publisher) RunPaced(ctx context.Context, ck Clock, start, end time.Time, rate float64) {
	period := PacePeriod(rate)
	phase := time.Duration(rand.Int64N(int64(period)))
	wake := start.Add(phase)
	t := time.NewTimer(time.Until(wake))
	defer t.Stop()
	maxN := p.maxBatch()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if p.Late != nil {
			report.RecordMicros(p.Late, now.Sub(wake).Microseconds())
		}
		if now.After(end) {
			now = end
		}
		for n := Due(rate, p.Bursts.active(now.Sub(start)), p.Sent); n > 0; n -= min(n, maxN) {
			if err := p.sendBatch(ck, min(n, maxN)); err != nil {
				p.Class.Errors.Add(1)
				return
			}
		}
		if !now.Before(end) {
			return
		}
		d, ok := nextTick(time.Now(), start.Add(phase), period, end)
		if !ok {
			return
		}
		wake = time.Now().Add(d)
		t.Reset(d)
	}
}

// nextTick returns how long after now a publisher whose ticks fall on
// first + k·period wakes next, and false when that tick is not before
// end: the publisher stops there. Waking every publisher at the end to
// send the fraction of a frame still due would start them all in the
// same instant, a burst no steady load has, measured in its last
// milliseconds.
func nextTick(now, first time.Time, period time.Duration, end time.Time) (time.Duration, bool) {
	d := period - now.Sub(first)%period
	return d, now.Add(d).Before(end)
}

// RunUnpaced sends as fast as the window lets it until end or ctx ends.
func (p *Publisher) RunUnpaced(ctx context.Context, ck Clock, end time.Time, w *Window) {
	maxN := p.maxBatch()
	for ctx.Err() == nil && time.Now().Before(end) {
		n := w.acquire(maxN)
		if n == 0 {
			return
		}
		if err := p.sendBatch(ck, n); err != nil {
			p.Class.Errors.Add(1)
			return
		}
	}
}

// Subscriber reads MESSAGE frames of one subscription on its own
// session, counting them and recording latency.
type Subscriber struct {
	Conn      *client.Conn // the session it reads
	Class     *Class       // counts what it reads
	Win       *Window      // nil unless publishers are paced by deliveries
	Delivered atomic.Int64 // MESSAGE frames read
	// Hist is owned by the read goroutine until it ends; nil when
	// latency is not recorded.
	Hist *hdrhistogram.Histogram
	// Set before run starts, with Hist: Parts splits each latency by
	// the kernel's receive time (nil: not split); Interval gathers the
	// latencies of each second across subscribers (nil: none); From
	// leaves out messages stamped before it (the warm-up), in
	// nanoseconds of the run's clock; Trace, when set, receives every
	// latency recorded and its parts.
	Parts    *Parts
	Interval *Interval
	From     *atomic.Int64
	Trace    func(Sample)

	// Set before run starts (the abuse scenario's honest subscribers):
	// ReadBPS paces reading to that many bytes per second, a client on a
	// slow link (0: as fast as possible); Browser fails the connection on
	// a text message that is not valid UTF-8, as a browser does;
	// StampedOnly counts MESSAGEs without a stamp in Foreign instead of
	// delivered.
	ReadBPS     int64
	Browser     bool
	StampedOnly bool
	Foreign     atomic.Int64

	// Ended says how the connection ended before the run did, and
	// LastError is the message of the last ERROR frame. Both are written
	// by the read goroutine before it sets Gone.
	Ended     string
	LastError string
	Gone      atomic.Bool
}

// fail records why the connection ended, once.
func (s *Subscriber) fail(why string) {
	s.Class.Errors.Add(1)
	s.Ended = why
	s.Gone.Store(true)
}

// Run reads until the connection fails or closes. done reports whether
// the run is over, so that the close it causes is not an error.
func (s *Subscriber) Run(ck Clock, done *atomic.Bool) {
	var pace *readPacer
	if s.ReadBPS > 0 {
		pace = &readPacer{bps: s.ReadBPS, start: time.Now()}
	}
	for {
		msg, err := s.Conn.ReadMessage(context.Background())
		if err != nil {
			if !done.Load() {
				s.fail(DescribeEnd(err))
			}
			return
		}
		readAt := time.Now()
		now := int64(readAt.Sub(ck.Base))
		kernel, kernelOK := s.Conn.Stamps.Last()
		if s.Conn.Proto == client.Centrifugo {
			if !s.readCentrifugo(msg, now, readAt, kernel, kernelOK) {
				return
			}
			continue
		}
		if s.Browser && s.Conn.LastType == websocket.MessageText && !utf8.Valid(msg) {
			s.fail(endInvalidUTF8)
			s.Conn.Close()
			return
		}
		s.Conn.Decoder.Feed(msg)
		var n int64
		for {
			f, err := s.Conn.Decoder.Next()
			if err != nil {
				s.fail("undecodable frame: " + err.Error())
				s.Conn.Close()
				return
			}
			if f == nil {
				break
			}
			switch f.Command {
			case stompframe.CommandMessage:
				if s.StampedOnly {
					if _, _, ok := parseStamp(f.Body); !ok {
						s.Foreign.Add(1)
						continue
					}
				}
				n++
				s.observe(f.Body, now, readAt, kernel, kernelOK)
			case stompframe.CommandError:
				s.Class.Errors.Add(1)
				s.LastError = f.Get("message")
			}
		}
		if pace != nil {
			pace.wait(len(msg))
		}
		if n > 0 {
			s.Delivered.Add(n)
			s.Class.Delivered.Add(n)
			if s.Win != nil {
				s.Win.release(n)
			}
		}
	}
}

// Window bounds the deliveries outstanding for unpaced publishers, so
// that "as fast as possible" measures the server's throughput instead of
// filling its per-session outbound queues until it closes subscribers as
// slow consumers. Credits are deliveries: a sent message takes fanout.
// Deliveries that never come (a server that drops) would shrink the window
// for good, so tick forgives the outstanding count when publishers have
// waited a whole tick without any delivery.
type Window struct {
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

// NewWindow returns a window of perSubscriber messages in flight per
// subscriber, for fanout subscribers.
func NewWindow(perSubscriber, fanout int64) *Window {
	w := &Window{fanout: fanout, limit: perSubscriber * fanout}
	w.cond.L = &w.mu
	return w
}

// acquire reserves up to max messages and returns how many; it blocks
// while the window is full and returns 0 once closed.
func (w *Window) acquire(max int64) int64 {
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
func (w *Window) release(n int64) {
	w.mu.Lock()
	w.inflight = max(w.inflight-n, 0)
	w.released = true
	if w.waiting > 0 {
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

// Tick is called once a second: it forgives lost deliveries when
// publishers waited a whole second for nothing.
func (w *Window) Tick() {
	w.mu.Lock()
	if w.waiting > 0 && !w.released {
		w.inflight = 0
		w.cond.Broadcast()
	}
	w.released = false
	w.mu.Unlock()
}

// Close wakes every waiting publisher for good.
func (w *Window) Close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// endInvalidUTF8 is how a browser-like subscriber ends on a text message
// that is not UTF-8.
const endInvalidUTF8 = "failed the socket: a text message is not valid UTF-8"

// DescribeEnd says how a connection ended: the close code and reason the
// server sent, or that it was lost without a close frame.
func DescribeEnd(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return fmt.Sprintf("closed %d %s", int(ce.Code), ce.Reason)
	}
	return "connection lost without a close frame"
}

// readPacer holds a reader to bps bytes per second on average.
type readPacer struct {
	bps   int64
	start time.Time
	read  int64
}

// wait accounts n bytes read and sleeps until they are due.
func (p *readPacer) wait(n int) {
	p.read += int64(n)
	due := p.start.Add(time.Duration(float64(p.read) / float64(p.bps) * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}
