package load

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// Parts divides a subscriber's latencies in two by the kernel receive
// time of the read that completed each message: the server's part, from
// the publisher's stamp to the kernel's arrival at the subscriber's
// socket (the server's work, its queues and the loopback network), and
// the tool's part, from that arrival to the moment the reader had the
// message (the load generator's scheduling, its reader and decoding). On
// loopback the kernel takes the receive time when the sender's write
// hands the bytes to the device (net.core.netdev_tstamp_prequeue), so
// the server's part ends at the server's write and the tool's part also
// holds the kernel's delivery from the device to the socket.
// The two add up to the latency by construction: the tool's part is
// measured and clamped to [0, latency], the server's is the rest.
//
// A Parts is owned by the read goroutine of its subscriber until that
// ends.
type Parts struct {
	Server *hdrhistogram.Histogram // stamp → kernel arrival, µs
	Tool   *hdrhistogram.Histogram // kernel arrival → read, µs
	// Split counts latencies divided in two; Unsplit those whose read
	// had no kernel time (a platform without it, or a read before the
	// kernel turned stamping on: it does so in deferred work when the
	// first socket of the system asks); Clamped those whose
	// kernel time was after the read or before the stamp (a step of the
	// wall clock), whose tool part was clamped.
	Split, Unsplit, Clamped int64
}

// NewParts returns empty parts.
func NewParts() *Parts {
	return &Parts{Server: report.NewHistogram(), Tool: report.NewHistogram()}
}

// Sample is one latency and its two parts.
type Sample struct {
	Total, Server, Tool time.Duration
	// Split is false when there was no kernel time: Server and Tool are
	// then zero.
	Split bool
}

// SplitLatency divides total, measured at the read whose wall-clock time
// is read, by the kernel's arrival time kernel (ok false: none).
func SplitLatency(total time.Duration, read, kernel time.Time, ok bool) (Sample, bool) {
	s := Sample{Total: total}
	if !ok {
		return s, false
	}
	tool := read.Sub(kernel)
	clamped := tool < 0 || tool > total
	tool = min(max(tool, 0), max(total, 0))
	s.Tool, s.Server, s.Split = tool, total-tool, true
	return s, clamped
}

// record adds one sample.
func (p *Parts) record(s Sample, clamped bool) {
	if !s.Split {
		p.Unsplit++
		return
	}
	p.Split++
	if clamped {
		p.Clamped++
	}
	report.RecordMicros(p.Server, s.Server.Microseconds())
	report.RecordMicros(p.Tool, s.Tool.Microseconds())
}

// Merge adds o's counts and histograms to p.
func (p *Parts) Merge(o *Parts) {
	p.Server.Merge(o.Server)
	p.Tool.Merge(o.Tool)
	p.Split += o.Split
	p.Unsplit += o.Unsplit
	p.Clamped += o.Clamped
}

// Interval gathers the latencies of the current second across
// subscribers, for per-second series. It is safe for concurrent use.
type Interval struct {
	mu sync.Mutex
	// Guarded by mu: the second's latencies and server parts, µs.
	total, server *hdrhistogram.Histogram
}

// NewInterval returns an empty interval.
func NewInterval() *Interval {
	return &Interval{total: report.NewHistogram(), server: report.NewHistogram()}
}

func (iv *Interval) record(s Sample) {
	iv.mu.Lock()
	report.RecordMicros(iv.total, s.Total.Microseconds())
	if s.Split {
		report.RecordMicros(iv.server, s.Server.Microseconds())
	}
	iv.mu.Unlock()
}

// Take returns the 99th percentile of the latencies and of their
// server parts since the last Take, in milliseconds (0 when there were
// none), and starts a new interval.
func (iv *Interval) Take() (total, server float64) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.total.TotalCount() > 0 {
		total = float64(iv.total.ValueAtQuantile(99)) / 1000
	}
	if iv.server.TotalCount() > 0 {
		server = float64(iv.server.ValueAtQuantile(99)) / 1000
	}
	iv.total.Reset()
	iv.server.Reset()
	return total, server
}

// observe records the latency of a message whose body is body, read at
// now (the run's clock) and readAt (the wall clock) from a read the
// kernel received at kernel (kernelOK false: unknown).
func (s *Subscriber) observe(body []byte, now int64, readAt, kernel time.Time, kernelOK bool) {
	if s.Hist == nil {
		return
	}
	ts, _, ok := parseStamp(body)
	if !ok || (s.From != nil && ts < s.From.Load()) {
		return
	}
	total := time.Duration(now - ts)
	report.RecordMicros(s.Hist, total.Microseconds())
	if s.Parts == nil && s.Interval == nil && s.Trace == nil {
		return
	}
	smp, clamped := SplitLatency(total, readAt, kernel, kernelOK)
	if s.Parts != nil {
		s.Parts.record(smp, clamped)
	}
	if s.Interval != nil {
		s.Interval.record(smp)
	}
	if s.Trace != nil {
		s.Trace(smp)
	}
}
