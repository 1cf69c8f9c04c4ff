package scenario

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// binWidth is the width of the arrival histogram's bins: an admission
// rate of R per second admits R/10 per bin, and a burst shorter than a
// second shows.
const binWidth = 100 * time.Millisecond

// untouchedSlow is the latency, in ms, above which the report counts a
// bin of the untouched sessions as slow: the storm target's p99.
const untouchedSlow = 50.0

// reconnectReport is the outcome of a reconnect storm. Times are seconds
// after instance A was stopped (SIGKILL, or SIGTERM for a drain).
type reconnectReport struct {
	Sessions int    `json:"sessions"`
	Stop     string `json:"stop"`
	// OnA is how many sessions A held when it was stopped; FillFailed
	// how many never reached it.
	OnA         int     `json:"on_a"`
	FillFailed  int     `json:"fill_failed"`
	FillSeconds float64 `json:"fill_seconds"`
	// Lost is how many of A's sessions ended after the stop; Back how
	// many of those then reached CONNECTED on B.
	Lost int `json:"lost"`
	Back int `json:"back"`
	// Back99Seconds and Back100Seconds are when 99 % and all of Lost
	// were back; nil when that was not reached.
	Back99Seconds  *float64 `json:"back_99_seconds,omitempty"`
	Back100Seconds *float64 `json:"back_100_seconds,omitempty"`
	// AdmitRate is B's -admit-rate read from -server-args (0: not
	// given), IdealSeconds Lost / AdmitRate.
	AdmitRate    float64 `json:"admit_rate,omitempty"`
	IdealSeconds float64 `json:"ideal_seconds,omitempty"`
	// Attempts is every reconnect attempt at B; it equals Back plus
	// the sum of Refusals.
	Attempts int `json:"attempts"`
	// AttemptLatency is how long an attempt took, from the dial to
	// CONNECTED or the refusal: how fast B answered.
	AttemptLatency *report.LatencySummary `json:"attempt_latency,omitempty"`
	// Refusals counts the attempts that failed, by reason: "HTTP 429",
	// "HTTP 503", "ERROR <message>", or the network error's kind.
	Refusals map[string]int `json:"refusals"`
	// RetryAfterHonoured counts the attempts made after a refusal that
	// carried a Retry-After; RetryAfterEarly those among them made
	// sooner than it asked (always 0 with this client).
	RetryAfterHonoured int `json:"retry_after_honoured"`
	RetryAfterEarly    int `json:"retry_after_early"`
	// ArrivalsPer100ms and AttemptsPer100ms are the histogram of
	// CONNECTEDs at B and of attempts, in binWidth bins from the stop.
	ArrivalsPer100ms []int   `json:"arrivals_per_100ms"`
	AttemptsPer100ms []int   `json:"attempts_per_100ms"`
	PeakArrivals     int     `json:"peak_arrivals_per_100ms"`
	PeakAtSeconds    float64 `json:"peak_at_seconds"`
	// PeakArrivalsPerSecond is the most arrivals in any ten
	// consecutive bins (a sliding second): what the bucket's rate
	// bounds, where a 100 ms bin also shows when B and this tool, on
	// the same cores, delivered them.
	PeakArrivalsPerSecond int `json:"peak_arrivals_per_second"`
	// ServerPeakAdmitted is B's stompgate_admission_peak_admitted at
	// the end: the most sessions B admitted within any 100 ms of its
	// life, the untouched sessions' opening included (0: B does not
	// expose it). The arrivals above are CONNECTEDs as this tool saw
	// them, which also carry whatever delayed a session between its
	// admission and its CONNECTED: the admission target is judged on
	// this figure, where the instance bounds what it takes in.
	ServerPeakAdmitted int `json:"server_peak_admitted_per_100ms,omitempty"`
	// ServerGCCycles is B's garbage collections from the stop to the
	// end, ServerProcsChanges its changes of processors meanwhile
	// (stompgate_procs_changes_total, with -adaptive-procs).
	ServerGCCycles     int64 `json:"server_gc_cycles"`
	ServerProcsChanges int64 `json:"server_procs_changes"`
	// ServerCPUSeconds and ToolCPUSeconds are the CPU time B and this
	// tool used from the stop until every session was back (or the
	// end), over StormSeconds of wall time.
	ServerCPUSeconds float64 `json:"server_cpu_seconds,omitempty"`
	ToolCPUSeconds   float64 `json:"tool_cpu_seconds,omitempty"`
	StormSeconds     float64 `json:"storm_seconds,omitempty"`
	// RSSPeakBytes is B's highest VmRSS sampled every 100 ms from the
	// stop to the end; RSSHWMBytes its VmHWM (the peak of its whole
	// life) at the end; MemoryLimitBytes its -memory-limit (0: none).
	RSSPeakBytes     int64 `json:"rss_peak_bytes,omitempty"`
	RSSHWMBytes      int64 `json:"rss_hwm_bytes,omitempty"`
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
	// Untouched is the sessions held on B throughout.
	Untouched untouchedReport `json:"untouched"`
	// ServerHandshakes is the change of B's stompgate_handshakes_total
	// by result from just before the stop to the end.
	ServerHandshakes map[string]int64 `json:"server_handshakes,omitempty"`
	// Errors are a few of the errors of the fill and the run.
	Errors []string `json:"errors,omitempty"`
	// reconnectSplit is what the kernel receive times add.
	reconnectSplit
}

// untouchedReport is what B's own sessions saw.
type untouchedReport struct {
	Sessions     int `json:"sessions"`
	Disconnected int `json:"disconnected"`
	// Before is their delivery latency over -settle, between A's fill
	// and its stop; Storm from the stop until every session was back
	// (or the end).
	Before *report.LatencySummary `json:"before,omitempty"`
	Storm  *report.LatencySummary `json:"storm,omitempty"`
	// StormMaxPer100ms is the highest latency, in ms, of the messages
	// received in each binWidth bin of the storm (0: none received):
	// when they waited, against the arrivals and attempts.
	StormMaxPer100ms []float64 `json:"storm_max_ms_per_100ms,omitempty"`
	// untouchedSplit is the latencies' server and tool parts.
	untouchedSplit
}

// slowBins summarises StormMaxPer100ms: the bins whose highest latency
// was over limit, the first and the worst of them (their start, in s).
func (u untouchedReport) slowBins(limit float64) (n int, first, worst float64) {
	return slowOf(u.StormMaxPer100ms, limit)
}

// backAt returns when the k-th earliest arrival came, in seconds; nil
// when fewer than k arrived. arrivals must be sorted.
func backAt(arrivals []time.Duration, k int) *float64 {
	if k <= 0 || k > len(arrivals) {
		return nil
	}
	v := report.Round3(arrivals[k-1].Seconds())
	return &v
}

// bins counts times into binWidth bins from 0; times before 0 go into
// the first.
func bins(times []time.Duration) []int {
	var out []int
	for _, t := range times {
		i := max(0, int(t/binWidth))
		for len(out) <= i {
			out = append(out, 0)
		}
		out[i]++
	}
	return out
}

// peakWindow returns the largest sum of n consecutive values of v.
func peakWindow(v []int, n int) int {
	best, sum := 0, 0
	for i, x := range v {
		sum += x
		if i >= n {
			sum -= v[i-n]
		}
		best = max(best, sum)
	}
	return best
}

// asciiChart draws vals as columns of # at most height rows high and
// width columns wide; a column stands for several bins (their largest
// value) when there are more bins than columns.
func asciiChart(w io.Writer, vals []int, height, width int, ref float64) {
	if len(vals) == 0 {
		return
	}
	per := (len(vals) + width - 1) / width
	var cols []int
	for i := 0; i < len(vals); i += per {
		cols = append(cols, slices.Max(vals[i:min(i+per, len(vals))]))
	}
	top := float64(slices.Max(cols))
	if ref > top {
		top = ref
	}
	if top == 0 {
		top = 1
	}
	refRow := -1
	if ref > 0 {
		refRow = int(ref / top * float64(height))
	}
	for row := height; row >= 1; row-- {
		label := ""
		if row == height {
			label = strconv.Itoa(int(top))
		}
		var b strings.Builder
		for _, c := range cols {
			switch {
			case float64(c) >= top*float64(row)/float64(height)-top/float64(2*height):
				b.WriteByte('#')
			case row == refRow:
				b.WriteByte('-')
			default:
				b.WriteByte(' ')
			}
		}
		fmt.Fprintf(w, "%6s |%s\n", label, b.String())
	}
	fmt.Fprintf(w, "%6s +%s\n", "0", strings.Repeat("-", len(cols)))
	fmt.Fprintf(w, "%6s  0 s%s%.1f s (one column: %v)\n", "",
		strings.Repeat(" ", max(1, len(cols)-9)), float64(len(vals))*binWidth.Seconds(), time.Duration(per)*binWidth)
}

func (r *reconnectReport) writeText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	secs := func(p *float64) string {
		if p == nil {
			return "not reached"
		}
		return fmt.Sprintf("%.2f s", *p)
	}
	fmt.Fprintf(tw, "sessions held on A\t%d of %d (filled in %.1f s, %d failed)\n", r.OnA, r.Sessions, r.FillSeconds, r.FillFailed)
	fmt.Fprintf(tw, "A stopped by\t%s\n", r.Stop)
	fmt.Fprintf(tw, "lost / back on B\t%d / %d\n", r.Lost, r.Back)
	fmt.Fprintf(tw, "99 %% back after\t%s\n", secs(r.Back99Seconds))
	fmt.Fprintf(tw, "100 %% back after\t%s\n", secs(r.Back100Seconds))
	if r.AdmitRate > 0 {
		fmt.Fprintf(tw, "ideal (lost / -admit-rate %g)\t%.2f s\n", r.AdmitRate, r.IdealSeconds)
		fmt.Fprintf(tw, "peak arrivals per 100 ms\t%d at %.1f s (admission rate: %.1f per 100 ms, peak %.2f×)\n",
			r.PeakArrivals, r.PeakAtSeconds, r.AdmitRate/10, float64(r.PeakArrivals)/(r.AdmitRate/10))
	} else {
		fmt.Fprintf(tw, "peak arrivals per 100 ms\t%d at %.1f s (no -admit-rate in -server-args)\n", r.PeakArrivals, r.PeakAtSeconds)
	}
	if r.AdmitRate > 0 {
		fmt.Fprintf(tw, "peak arrivals in any second\t%d (%.2f× the admission rate)\n", r.PeakArrivalsPerSecond, float64(r.PeakArrivalsPerSecond)/r.AdmitRate)
	} else {
		fmt.Fprintf(tw, "peak arrivals in any second\t%d\n", r.PeakArrivalsPerSecond)
	}
	switch {
	case r.ServerPeakAdmitted > 0 && r.AdmitRate > 0:
		fmt.Fprintf(tw, "peak admitted by B in 100 ms\t%d (%.2f× the admission rate; B's own count, any 100 ms of its life)\n",
			r.ServerPeakAdmitted, float64(r.ServerPeakAdmitted)/(r.AdmitRate/10))
	case r.ServerPeakAdmitted > 0:
		fmt.Fprintf(tw, "peak admitted by B in 100 ms\t%d (B's own count, any 100 ms of its life)\n", r.ServerPeakAdmitted)
	default:
		fmt.Fprintf(tw, "peak admitted by B in 100 ms\tnot exposed by B\n")
	}
	fmt.Fprintf(tw, "attempts at B\t%d = %d back + %d refused\n", r.Attempts, r.Back, r.Attempts-r.Back)
	if l := r.AttemptLatency; l != nil {
		fmt.Fprintf(tw, "attempt until answered\tp50 %.1f ms, p99 %.1f ms, max %.1f ms\n", l.P50, l.P99, l.Max)
	}
	fmt.Fprintf(tw, "after a Retry-After\t%d attempts, %d sooner than asked\n", r.RetryAfterHonoured, r.RetryAfterEarly)
	rss := func(v int64) string {
		if v == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.1f MiB", MiB(v))
	}
	limit := "no -memory-limit in -server-args"
	if r.MemoryLimitBytes > 0 {
		limit = fmt.Sprintf("-memory-limit %.1f MiB", MiB(r.MemoryLimitBytes))
	}
	if r.StormSeconds > 0 {
		fmt.Fprintf(tw, "CPU during the storm\tB %.1f s, this tool %.1f s, in %.1f s\n", r.ServerCPUSeconds, r.ToolCPUSeconds, r.StormSeconds)
	}
	fmt.Fprintf(tw, "B's RSS peak\t%s sampled, %s VmHWM (%s)\n", rss(r.RSSPeakBytes), rss(r.RSSHWMBytes), limit)
	fmt.Fprintf(tw, "B during the storm\t%d garbage collections, %d changes of processors\n", r.ServerGCCycles, r.ServerProcsChanges)
	u := r.Untouched
	lat := func(l *report.LatencySummary) string {
		if l == nil {
			return "no messages"
		}
		return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d messages)", l.P50, l.P99, l.Max, l.Count)
	}
	fmt.Fprintf(tw, "untouched sessions on B\t%d, %d disconnected\n", u.Sessions, u.Disconnected)
	fmt.Fprintf(tw, "  latency before the stop\t%s\n", lat(u.Before))
	fmt.Fprintf(tw, "  latency during the storm\t%s\n", lat(u.Storm))
	if n, first, worst := u.slowBins(untouchedSlow); n > 0 {
		fmt.Fprintf(tw, "  100 ms with a message over %g ms\t%d of %d, the first at %.1f s, the worst at %.1f s\n",
			untouchedSlow, n, len(u.StormMaxPer100ms), first, worst)
	}
	tw.Flush()
	r.writeSplitText(w)
	fmt.Fprintln(w)

	if len(r.Refusals) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "refused attempts by reason\tcount")
		for _, k := range slices.Sorted(maps.Keys(r.Refusals)) {
			fmt.Fprintf(tw, "%s\t%d\n", k, r.Refusals[k])
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(r.ServerHandshakes) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "B's stompgate_handshakes_total, change\tcount")
		for _, k := range slices.Sorted(maps.Keys(r.ServerHandshakes)) {
			fmt.Fprintf(tw, "%s\t%d\n", k, r.ServerHandshakes[k])
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "arrivals at B per 100 ms after the stop (- : the admission rate):")
	asciiChart(w, r.ArrivalsPer100ms, 10, 100, r.AdmitRate/10)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "attempts started per 100 ms after the stop:")
	asciiChart(w, r.AttemptsPer100ms, 10, 100, 0)
	fmt.Fprintln(w)
	for _, e := range r.Errors {
		fmt.Fprintln(w, "error:", e)
	}
}

// flagValue returns the value of the flag name (without dashes) in args,
// written as -name v, -name=v, --name v or --name=v; the last one wins,
// as with the flag package.
func flagValue(args []string, name string) (string, bool) {
	var v string
	found := false
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		switch {
		case a == name && i+1 < len(args):
			v, found = args[i+1], true
		case strings.HasPrefix(a, name+"="):
			v, found = a[len(name)+1:], true
		}
	}
	return v, found
}

// parseBytes reads a size as Go's GOMEMLIMIT writes it: a number with
// an optional B, KiB, MiB, GiB or TiB suffix.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with B, KiB, MiB, GiB or TiB", s)
	}
	return int64(v * float64(mult)), nil
}
