package scenario

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/report"
	"github.com/stompgate/stompgate/loadtest/internal/scrape"
)

// Section is a scenario's own part of a report that another package
// fills (abuse's attacks and verdicts): it goes in the JSON as it is and
// prints itself in the text after the classes.
type Section interface {
	WriteText(w io.Writer)
}

// Report is the outcome of one run, printed as text or JSON.
type Report struct {
	Scenario string         `json:"scenario"`
	Target   string         `json:"target"`
	Started  time.Time      `json:"started"`
	Settings map[string]any `json:"settings"`
	// LoadSeconds is the load period actually run (shorter than
	// -duration when interrupted); ElapsedSeconds adds the drain.
	LoadSeconds    float64 `json:"load_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Interrupted    bool    `json:"interrupted"`

	Classes []report.ClassReport `json:"classes,omitempty"`
	Storm   *stormReport         `json:"handshake_storm,omitempty"`
	Idle    *idleReport          `json:"idle,omitempty"`
	Abuse   Section              `json:"abuse,omitempty"`
	Rooms   *roomsReport         `json:"rooms,omitempty"`
	// Reconnect is reconnect-storm's section.
	Reconnect *reconnectReport `json:"reconnect_storm,omitempty"`
	Server    *serverReport    `json:"server,omitempty"`
	Tool      toolReport       `json:"tool"`
	Series    []report.Series  `json:"series,omitempty"`
	Notes     []string         `json:"notes,omitempty"`
}

func (r *Report) fromLoad(res LoadResult) {
	r.LoadSeconds = res.loadSeconds
	r.ElapsedSeconds = res.elapsedSeconds
	r.Interrupted = res.Interrupted
	r.Classes = res.Classes
	r.Series = res.series
	r.Server = res.server
	r.Tool = res.tool
}

// emit writes the report to stdout (text or JSON) and the chart, if asked.
func (r *Report) emit(cfg *Common, stdout io.Writer, title string) error {
	if cfg.chart != "" {
		if err := writeChartFile(cfg.chart, title, r.Series); err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
	}
	if cfg.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.WriteText(stdout, title)
	return nil
}

func writeChartFile(path, title string, ss []report.Series) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteChart(f, title, ss); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteText writes the report as text, title first.
func (r *Report) WriteText(w io.Writer, title string) {
	fmt.Fprintln(w, title)
	state := "completed"
	if r.Interrupted {
		state = "interrupted"
	}
	fmt.Fprintf(w, "target %s, load %.1fs (%s), %.1fs with drain\n\n", r.Target, r.LoadSeconds, state, r.ElapsedSeconds)

	if len(r.Classes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "class\tpublishers\tsubscribers\tsent\texpected\tdelivered\tratio\tsent/s\tdelivered/s\tdelivered per subscriber\terrors\t")
		for _, c := range r.Classes {
			per := "-"
			if s := c.PerSubscriberDelivered; s != nil {
				per = fmt.Sprintf("%d..%d", s.Min, s.Max)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%.1f\t%s\t%d\t\n",
				c.Name, c.Publishers, c.Subscribers, c.Sent, c.Expected, c.Delivered,
				c.DeliveryRatio, c.SentPerSec, c.DeliveredPerSec, per, c.Errors)
		}
		tw.Flush()
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "latency (ms)\tmessages\tp50\tp90\tp99\tmax\t")
		for _, c := range r.Classes {
			if l := c.Latency; l != nil {
				fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", c.Name, l.Count, l.P50, l.P90, l.P99, l.Max)
			}
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if r.Storm != nil {
		r.Storm.writeText(w)
	}
	if r.Idle != nil {
		r.Idle.writeText(w)
	}
	if r.Abuse != nil {
		r.Abuse.WriteText(w)
	}
	if r.Rooms != nil {
		r.Rooms.writeText(w)
	}
	if r.Reconnect != nil {
		r.Reconnect.writeText(w)
	}
	if s := r.Server; s != nil {
		s.writeText(w)
	}
	if r.Tool.Messages > 0 {
		fmt.Fprintf(w, "tool CPU: %.3fs over %d messages sent+received: %.2f µs per message\n",
			r.Tool.CPUSeconds, r.Tool.Messages, r.Tool.CPUPerMessageMicros)
	} else {
		fmt.Fprintf(w, "tool CPU: %.3fs\n", r.Tool.CPUSeconds)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

func (s *serverReport) writeText(w io.Writer) {
	switch {
	case s.MetricsAvailable && s.Frames != nil:
		f := s.Frames
		holds := "holds"
		if s.Balanced != nil && !*s.Balanced {
			holds = "DOES NOT HOLD"
		}
		fmt.Fprintf(w, "server /metrics (%s), change over the run:\n", s.MetricsURL)
		fmt.Fprintf(w, "  all frames: received %d = passed %d + dropped %d\n", f.Received, f.Passed, f.Dropped)
		fmt.Fprintf(w, "  SEND:       received %d = passed %d + dropped %d\n", f.SendReceived, f.SendPassed, f.SendDropped)
		fmt.Fprintf(w, "  received = passed + dropped %s\n", holds)
	default:
		fmt.Fprintf(w, "server /metrics: skipped (%s)\n", s.MetricsNote)
	}
	if s.CPUSource != "" {
		src := "process_cpu_seconds_total"
		if s.CPUSource == "proc" {
			src = fmt.Sprintf("/proc/%d/stat", s.PID)
		}
		fmt.Fprintf(w, "server CPU (%s): %.3fs", src, s.CPUSeconds)
		if s.CPUPerDeliveredMicros > 0 {
			fmt.Fprintf(w, ", %.2f µs per delivered message, %.2f µs per sent message", s.CPUPerDeliveredMicros, s.CPUPerSentMicros)
		}
		fmt.Fprintln(w)
	}
	if s.RSSSource != "" {
		src := scrape.MetricRSS
		if s.RSSSource == "proc" {
			src = fmt.Sprintf("/proc/%d/status VmRSS", s.PID)
		}
		fmt.Fprintf(w, "server RSS (%s) at the end of the load: %.1f MiB\n", src, MiB(s.RSSBytes))
	}
}
