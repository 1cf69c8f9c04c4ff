package scenario

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// A storm's figures as the tool reads them hold the tool's own delays
// too: B and the tool share the cores, and a CONNECTED or a MESSAGE that
// reached the client's socket waits there until the tool's goroutine
// runs. With kernel stamps (SO_TIMESTAMPNS, Linux) each read also says
// when the kernel received its bytes, which splits both: arrivals are
// counted by the kernel time the CONNECTED reached the client's socket,
// and each untouched latency into the server's part (stamp to arrival
// at the socket) and the tool's (arrival to read).

// reconnectSplit is what the kernel receive times add to the report.
type reconnectSplit struct {
	// KernelStamps is whether the arrivals and latencies were split by
	// the kernel's receive times (-kernel-stamps on Linux). With them,
	// ArrivalsPer100ms, the peaks and the times back count each
	// CONNECTED at the kernel time it reached the client's socket.
	KernelStamps bool `json:"kernel_stamps"`
	// ArrivalsReadPer100ms is the histogram of CONNECTEDs at the times
	// the tool read them (what ArrivalsPer100ms is without stamps), and
	// PeakArrivalsRead, PeakArrivalsReadPerSecond its peaks.
	ArrivalsReadPer100ms      []int `json:"arrivals_read_per_100ms,omitempty"`
	PeakArrivalsRead          int   `json:"peak_arrivals_read_per_100ms,omitempty"`
	PeakArrivalsReadPerSecond int   `json:"peak_arrivals_read_per_second,omitempty"`
	// ConnectedToolDelay is how long each CONNECTED waited in the
	// client's socket before the tool read it; ConnectedUnstamped counts
	// those without a kernel time (counted at their read).
	ConnectedToolDelay *report.LatencySummary `json:"connected_tool_delay,omitempty"`
	ConnectedUnstamped int                    `json:"connected_unstamped,omitempty"`
	// ServerListenerRefused is the change of B's
	// stompgate_listener_refused_total by reason from just before the
	// stop to the end: the connections B refused at accept, before any
	// HTTP (each is one of the "HTTP 503" refusals).
	ServerListenerRefused map[string]int64 `json:"server_listener_refused,omitempty"`
}

// metricListenerRefused is B's count of connections refused at accept.
const metricListenerRefused = "stompgate_listener_refused_total"

// listenerRefusals is the change of stompgate_listener_refused_total
// by reason between two scrapes; nil when none was refused.
func listenerRefusals(before, after scrape.Samples) map[string]int64 {
	var out map[string]int64
	for k, v := range after {
		labels, ok := strings.CutPrefix(k, metricListenerRefused+"{")
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(labels, `reason="`)
		reason, _, _ := strings.Cut(rest, `"`)
		if d := int64(v - before[k]); d != 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[reason] += d
		}
	}
	return out
}

// untouchedSplit is the untouched sessions' latencies split in two.
type untouchedSplit struct {
	// BeforeServer and StormServer are the server's part of Before and
	// Storm: from the publisher's stamp until the message reached the
	// subscriber's socket (the publisher's own write included).
	// StormTool is the tool's part during the storm: from that arrival
	// until the reader had it.
	BeforeServer *report.LatencySummary `json:"before_server_part,omitempty"`
	StormServer  *report.LatencySummary `json:"storm_server_part,omitempty"`
	StormTool    *report.LatencySummary `json:"storm_tool_part,omitempty"`
	// StormServerMaxPer100ms is the highest server part, in ms, of the
	// messages that reached the sockets in each binWidth bin of the
	// storm (by kernel time).
	StormServerMaxPer100ms []float64 `json:"storm_server_max_ms_per_100ms,omitempty"`
	// Split counts the latencies divided, Unsplit those without a
	// kernel time, Clamped those whose tool part was clamped to
	// [0, latency] (a wall-clock step).
	Split   int64 `json:"split,omitempty"`
	Unsplit int64 `json:"unsplit,omitempty"`
	Clamped int64 `json:"clamped,omitempty"`
}

// connected is one CONNECTED on B: when the tool read it and when the
// kernel received it (zero: unknown).
type connected struct {
	read, kernel time.Time
}

// arrivalTimes returns the CONNECTEDs' times from stop, sorted: at the
// kernel's receive time where known (stamped), and at the read
// otherwise; and at the read, for comparison.
func arrivalTimes(cs []connected, stop time.Time, stamped bool) (at, read []time.Duration) {
	at = make([]time.Duration, len(cs))
	read = make([]time.Duration, len(cs))
	for i, c := range cs {
		read[i] = c.read.Sub(stop)
		at[i] = read[i]
		if stamped && !c.kernel.IsZero() {
			at[i] = c.kernel.Sub(stop)
		}
	}
	slices.Sort(at)
	slices.Sort(read)
	return at, read
}

// fillSplit fills the split figures of rr from the CONNECTEDs: read
// arrivals and how long each CONNECTED waited for the tool.
func (rr *reconnectReport) fillSplit(cs []connected, read []time.Duration, stamped bool) {
	rr.KernelStamps = stamped
	if !stamped {
		return
	}
	rr.ArrivalsReadPer100ms = bins(read)
	rr.PeakArrivalsReadPerSecond = peakWindow(rr.ArrivalsReadPer100ms, int(time.Second/binWidth))
	if len(rr.ArrivalsReadPer100ms) > 0 {
		rr.PeakArrivalsRead = slices.Max(rr.ArrivalsReadPer100ms)
	}
	h := report.NewHistogram()
	for _, c := range cs {
		if c.kernel.IsZero() {
			rr.ConnectedUnstamped++
			continue
		}
		report.RecordMicros(h, max(c.read.Sub(c.kernel), 0).Microseconds())
	}
	if h.TotalCount() > 0 {
		rr.ConnectedToolDelay = report.Summarize(h)
	}
}

// writeSplitText writes the split figures, when there are any, and B's
// refusals at accept.
func (r *reconnectReport) writeSplitText(w io.Writer) {
	if len(r.ServerListenerRefused) > 0 {
		fmt.Fprintf(w, "refused by B at accept, before any HTTP: %s\n", countsText(r.ServerListenerRefused))
	}
	if !r.KernelStamps {
		fmt.Fprintln(w, "arrivals counted when the tool read each CONNECTED (no kernel stamps)")
		return
	}
	fmt.Fprintf(w, "arrivals counted at the kernel time each CONNECTED reached the client's socket (%d without one, counted at their read)\n", r.ConnectedUnstamped)
	fmt.Fprintf(w, "  as the tool read them: peak %d per 100 ms, %d in any second\n", r.PeakArrivalsRead, r.PeakArrivalsReadPerSecond)
	if l := r.ConnectedToolDelay; l != nil {
		fmt.Fprintf(w, "  CONNECTED waiting in the socket for the tool: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", l.P50, l.P99, l.Max)
	}
	u := r.Untouched
	lat := func(l *report.LatencySummary) string {
		if l == nil {
			return "no messages"
		}
		return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms", l.P50, l.P99, l.Max)
	}
	fmt.Fprintf(w, "untouched latency, the server's part (stamp to the subscriber's socket), %d split, %d not, %d clamped:\n", u.Split, u.Unsplit, u.Clamped)
	fmt.Fprintf(w, "  before the stop: %s\n", lat(u.BeforeServer))
	fmt.Fprintf(w, "  during the storm: %s\n", lat(u.StormServer))
	fmt.Fprintf(w, "  the tool's part during the storm (socket to read): %s\n", lat(u.StormTool))
	n, first, worst := slowOf(u.StormServerMaxPer100ms, untouchedSlow)
	if n > 0 {
		fmt.Fprintf(w, "  100 ms with a server part over %g ms: %d of %d, the first at %.1f s, the worst at %.1f s\n",
			untouchedSlow, n, len(u.StormServerMaxPer100ms), first, worst)
	}
}

// slowOf returns the bins of v over limit, the first and the worst of
// them (their start, in s).
func slowOf(v []float64, limit float64) (n int, first, worst float64) {
	top := -1.0
	for i, x := range v {
		if x <= limit {
			continue
		}
		at := float64(i) * binWidth.Seconds()
		if n == 0 {
			first = at
		}
		n++
		if x > top {
			top, worst = x, at
		}
	}
	return n, first, worst
}
