package scenario

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stompgate/stompgate/loadtest/internal/client"
	"github.com/stompgate/stompgate/loadtest/internal/load"
	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// roomsMeasure are the rooms settings that say how latency is measured
// and which protocol the sessions speak.
type roomsMeasure struct {
	protocol     string
	kernelStamps bool
	warmup       time.Duration
	// trace, when set (tests), receives every latency recorded and its
	// parts.
	trace func(load.Sample)
}

func (m *roomsMeasure) register(fs *flag.FlagSet) {
	fs.StringVar(&m.protocol, "protocol", "stomp", "what the sessions speak: stomp (stompgate, RabbitMQ Web-STOMP, any STOMP broker) or centrifugo (Centrifugo's JSON protocol: -url ws://HOST:PORT/connection/websocket, anonymous, channels room:N in a namespace \"room\" that lets clients subscribe and publish; -body pad and -heart-beat 0 only)")
	fs.BoolVar(&m.kernelStamps, "kernel-stamps", true, "on Linux, take the kernel's receive time of every read (SO_TIMESTAMPNS) and split each latency into the server's part (stamp → arrival at the socket) and the tool's (arrival → read); elsewhere ignored")
	fs.DurationVar(&m.warmup, "warmup", 0, "leave out of the latencies the messages sent in this first part of -duration (a warm-up); counts and CPU still cover all of it")
}

func (m *roomsMeasure) validate(c *roomsConfig) error {
	p, err := client.ParseProtocol(m.protocol)
	if err != nil {
		return fmt.Errorf("-protocol %q: want stomp or centrifugo", m.protocol)
	}
	if p == client.Centrifugo && c.body != load.BodyPad {
		return fmt.Errorf("-body %q: -protocol centrifugo sends pad bodies only (a JSON string)", c.body)
	}
	if p == client.Centrifugo && c.heartBeat != 0 {
		return fmt.Errorf("-heart-beat %v: -protocol centrifugo has no STOMP heart-beats (its sessions answer the server's pings); give -heart-beat 0", c.heartBeat)
	}
	if m.warmup < 0 || m.warmup >= c.Duration {
		return fmt.Errorf("-warmup %v: must be in [0, -duration %v)", m.warmup, c.Duration)
	}
	return nil
}

// roomsSplit is what the rooms report adds about its own measurement.
type roomsSplit struct {
	Protocol      string  `json:"protocol"`
	WarmupSeconds float64 `json:"warmup_seconds,omitempty"`
	GOMAXPROCS    int     `json:"gomaxprocs"`
	// ServerPart is each latency from the publisher's stamp to the
	// kernel's arrival of the message at the subscriber's socket;
	// ToolPart from that arrival to the moment the tool's reader had it.
	// The two add up to Latency, sample by sample. Split counts the
	// latencies divided; Unsplit those without a kernel time; Clamped
	// those whose tool part was clamped to [0, latency] (a wall-clock
	// step).
	ServerPart *report.LatencySummary `json:"server_part,omitempty"`
	ToolPart   *report.LatencySummary `json:"tool_part,omitempty"`
	Split      int64                  `json:"split,omitempty"`
	Unsplit    int64                  `json:"unsplit,omitempty"`
	Clamped    int64                  `json:"clamped,omitempty"`
	// TimerLateness is how late the publishers' timers woke (one
	// publisher per room): it delays sends, not latencies, since a
	// stamp is taken when its frame is written.
	TimerLateness *report.LatencySummary `json:"timer_lateness,omitempty"`
	// PublisherWrite is how long a message took from its stamp until
	// its publisher's write returned (one publisher per room): the part
	// of the server part spent in the tool and the sending kernel.
	PublisherWrite *report.LatencySummary `json:"publisher_write,omitempty"`
	// P99Series and ServerP99Series are the p99 of the latencies and of
	// their server parts in each second of the load, ms.
	P99Series       []float64 `json:"p99_ms_per_second,omitempty"`
	ServerP99Series []float64 `json:"server_part_p99_ms_per_second,omitempty"`
}

// roomsProbe holds what the rooms run gathers to split its latencies.
type roomsProbe struct {
	from     atomic.Int64
	interval *load.Interval
	total    report.Series
	server   report.Series
	lastSrv  float64
	stamps   bool
}

// setup prepares r: the protocol, kernel stamps, and each latency
// subscriber's parts.
func (m *roomsMeasure) setup(r *LoadRun) *roomsProbe {
	p := &roomsProbe{interval: load.NewInterval(), stamps: m.kernelStamps}
	proto, _ := client.ParseProtocol(m.protocol)
	r.dialer.Protocol = proto
	r.dialer.KernelStamps = m.kernelStamps
	r.SubSetup = func(s *load.Subscriber) {
		if s.Hist == nil {
			return
		}
		s.Parts, s.Interval, s.From, s.Trace = load.NewParts(), p.interval, &p.from, m.trace
	}
	r.Sampled = append(r.Sampled,
		&report.GaugeSeries{Series: &p.total, Read: func() float64 {
			t, srv := p.interval.Take()
			p.lastSrv = srv
			return t
		}},
		&report.GaugeSeries{Series: &p.server, Read: func() float64 { return p.lastSrv }},
	)
	return p
}

// start is called with the load's start: latencies count from start +
// warmup.
func (p *roomsProbe) start(r *LoadRun, start time.Time, warmup time.Duration) {
	p.from.Store(int64(start.Add(warmup).Sub(r.Clock.Base)))
}

// finish fills rs from the run's subscribers and publishers.
func (p *roomsProbe) finish(rs *roomsSplit, m *roomsMeasure, classes []*load.Class) {
	rs.Protocol = m.protocol
	rs.WarmupSeconds = m.warmup.Seconds()
	rs.GOMAXPROCS = runtime.GOMAXPROCS(0)
	parts := load.NewParts()
	var late, write *hdrhistogram.Histogram
	for _, c := range classes {
		for _, s := range c.Subs {
			if s != nil && s.Parts != nil {
				parts.Merge(s.Parts)
			}
		}
		for _, pub := range c.Pubs {
			if pub == nil || pub.Late == nil {
				continue
			}
			if late == nil {
				late, write = report.NewHistogram(), report.NewHistogram()
			}
			late.Merge(pub.Late)
			if pub.Write != nil {
				write.Merge(pub.Write)
			}
		}
	}
	rs.ServerPart, rs.ToolPart = report.Summarize(parts.Server), report.Summarize(parts.Tool)
	rs.Split, rs.Unsplit, rs.Clamped = parts.Split, parts.Unsplit, parts.Clamped
	rs.TimerLateness = report.Summarize(late)
	rs.PublisherWrite = report.Summarize(write)
	rs.P99Series, rs.ServerP99Series = p.total.Values, p.server.Values
	if parts.Split == 0 {
		rs.ServerP99Series = nil
	}
}

// writeSplit prints the measurement's own lines of the rooms report.
func (rs *roomsSplit) writeSplit(w io.Writer) {
	if s, t := rs.ServerPart, rs.ToolPart; s != nil && t != nil {
		unsplit := ""
		if rs.Unsplit > 0 {
			unsplit = fmt.Sprintf(", %d read before the kernel stamped", rs.Unsplit)
		}
		fmt.Fprintf(w, "  server part (stamp → kernel arrival, %d split by SO_TIMESTAMPNS%s): p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms\n",
			rs.Split, unsplit, s.P50, s.P99, s.P999, s.Max)
		fmt.Fprintf(w, "  tool part (kernel arrival → read): p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms",
			t.P50, t.P99, t.P999, t.Max)
		if rs.Clamped > 0 {
			fmt.Fprintf(w, " (%d clamped)", rs.Clamped)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "  latency not split: no kernel receive times (-kernel-stamps=false, or not Linux)")
	}
	if l := rs.TimerLateness; l != nil {
		fmt.Fprintf(w, "tool timers (one publisher per room, %d wake-ups): late by p50 %.3f ms, p99 %.3f ms, max %.3f ms; GOMAXPROCS %d\n",
			l.Count, l.P50, l.P99, l.Max, rs.GOMAXPROCS)
	}
	if l := rs.PublisherWrite; l != nil {
		fmt.Fprintf(w, "publisher writes (stamp → write returned, one publisher per room): p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
			l.P50, l.P99, l.Max)
	}
	if len(rs.P99Series) > 0 {
		fmt.Fprintf(w, "p99 per second, ms: %s\n", joinFloats(rs.P99Series))
	}
	if len(rs.ServerP99Series) > 0 {
		fmt.Fprintf(w, "server part p99 per second, ms: %s\n", joinFloats(rs.ServerP99Series))
	}
}

// joinFloats formats vals separated by spaces.
func joinFloats(vals []float64) string {
	b := make([]byte, 0, 8*len(vals))
	for i, v := range vals {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, report.FormatValue(v)...)
	}
	return string(b)
}
