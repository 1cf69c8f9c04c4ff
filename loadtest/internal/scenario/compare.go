package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// RunCompare reads rooms reports (-json) in groups, one per size: the
// baseline server's run first and each other server's run at the same
// size after it, in the order of -names. It prints a Markdown table of
// every server's figures with each other's ratio to the baseline; -chart
// draws those ratios as bars.
//
//	loadtest compare -names stompgate,RabbitMQ -chart rooms.svg a1.json b1.json a5.json b5.json
//	loadtest compare -names stompgate,Centrifugo,RabbitMQ a1.json c1.json r1.json
func RunCompare(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := NewFlagSet("compare", stderr)
	names := fs.String("names", "baseline,other", "the servers' names, baseline first, separated by commas")
	chart := fs.String("chart", "", "write an SVG bar chart of the ratios to this file")
	jsonOut := fs.Bool("json", false, "print the rows as JSON instead of Markdown")
	if err := fs.Parse(args); err != nil {
		return err
	}
	all := strings.Split(*names, ",")
	if len(all) < 2 || slices.Contains(all, "") {
		return fmt.Errorf("-names %q: want two or more names separated by commas", *names)
	}
	base, others := all[0], all[1:]
	files := fs.Args()
	if len(files) == 0 || len(files)%len(all) != 0 {
		return fmt.Errorf("compare: want groups of %d rooms reports (baseline first), got %d files", len(all), len(files))
	}
	var rows []comparison
	for i := 0; i < len(files); i += len(all) {
		a, err := readRooms(files[i])
		if err != nil {
			return err
		}
		for k, other := range others {
			b, err := readRooms(files[i+1+k])
			if err != nil {
				return err
			}
			c := compareRooms(a, b)
			c.OtherName = other
			rows = append(rows, c)
		}
	}
	other := strings.Join(others, ", ")
	if *chart != "" {
		if err := writeComparisonChart(*chart, base, other, rows); err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	writeComparison(stdout, base, other, rows)
	return nil
}

// readRooms reads the rooms block of a -json report.
func readRooms(path string) (*roomsReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Rooms == nil {
		return nil, fmt.Errorf("%s: not a rooms report (scenario %q)", path, rep.Scenario)
	}
	return rep.Rooms, nil
}

// comparison is one size run against both servers. Each ratio is the
// other server's figure over the baseline's (0 when either is missing):
// above 1 the other costs more, is slower, or delivers more.
type comparison struct {
	Sessions  int          `json:"sessions"`
	OtherName string       `json:"other_name,omitempty"`
	Baseline  *roomsReport `json:"baseline"`
	Other     *roomsReport `json:"other"`
	CPU       float64      `json:"cpu_per_delivered_ratio"`
	P50       float64      `json:"p50_ratio"`
	P99       float64      `json:"p99_ratio"`
	P999      float64      `json:"p999_ratio"`
	ServerP99 float64      `json:"server_part_p99_ratio"`
	RSS       float64      `json:"rss_per_session_ratio"`
	Delivered float64      `json:"delivered_per_sec_ratio"`
}

func compareRooms(a, b *roomsReport) comparison {
	c := comparison{Sessions: a.Sessions, Baseline: a, Other: b}
	c.CPU = over(b.ServerCPUPerDeliveredMicros, a.ServerCPUPerDeliveredMicros)
	if a.Latency != nil && b.Latency != nil {
		c.P50 = over(b.Latency.P50, a.Latency.P50)
		c.P99 = over(b.Latency.P99, a.Latency.P99)
		c.P999 = over(b.Latency.P999, a.Latency.P999)
	}
	if a.ServerPart != nil && b.ServerPart != nil {
		c.ServerP99 = over(b.ServerPart.P99, a.ServerPart.P99)
	}
	c.RSS = over(b.RSSPerSessionKiB, a.RSSPerSessionKiB)
	c.Delivered = over(b.DeliveredPerSec, a.DeliveredPerSec)
	return c
}

// over is a/b rounded to 3 significant digits, 0 when either is not
// positive.
func over(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	r := a / b
	if r >= 100 {
		return report.Round3(float64(int64(r + 0.5)))
	}
	return report.Round3(r)
}

// writeComparison prints the Markdown table: per size, the baseline's
// figures, then each other server's and its ratio row.
func writeComparison(w io.Writer, base, other string, rows []comparison) {
	fmt.Fprintln(w, "| sessions | server | delivered msg/s (offered) | delivery ratio | p50 ms | p99 ms | p99.9 ms | server part p99 ms | server CPU µs / delivered | server cores | server RSS MiB (KiB / session) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	ratio := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return report.FormatValue(v) + "×"
	}
	for i, c := range rows {
		name := c.OtherName
		if name == "" {
			name = other
		}
		type srv struct {
			name string
			r    *roomsReport
		}
		servers := []srv{{name, c.Other}}
		if i == 0 || rows[i-1].Baseline != c.Baseline {
			servers = append([]srv{{base, c.Baseline}}, servers...)
		}
		for _, s := range servers {
			r := s.r
			p50, p99, p999, sp99 := "-", "-", "-", "-"
			if r.Latency != nil {
				p50, p99, p999 = report.FormatValue(r.Latency.P50), report.FormatValue(r.Latency.P99), report.FormatValue(r.Latency.P999)
			}
			if r.ServerPart != nil {
				sp99 = report.FormatValue(r.ServerPart.P99)
			}
			fmt.Fprintf(w, "| %d | %s | %.0f (%.0f) | %.3f | %s | %s | %s | %s | %s | %.2f | %.0f (%.1f) |\n",
				r.Sessions, s.name, r.DeliveredPerSec, r.OfferedPerSec, r.DeliveryRatio, p50, p99, p999, sp99,
				report.FormatValue(r.ServerCPUPerDeliveredMicros), r.ServerCPUCores, MiB(r.RSSEnd), r.RSSPerSessionKiB)
		}
		fmt.Fprintf(w, "| %d | **%s ÷ %s** | %s | | %s | %s | %s | %s | **%s** | | %s |\n",
			c.Sessions, name, base, ratio(c.Delivered), ratio(c.P50), ratio(c.P99), ratio(c.P999), ratio(c.ServerP99), ratio(c.CPU), ratio(c.RSS))
	}
}

// writeComparisonChart draws the ratios, one group per figure and one
// bar per size.
func writeComparisonChart(path, base, other string, rows []comparison) error {
	groups := []string{"CPU per delivered msg", "p50 latency", "p99 latency", "RSS per session", "delivered msg/s"}
	var sets []report.BarSet
	for _, c := range rows {
		name := fmt.Sprintf("%d sessions", c.Sessions)
		if c.OtherName != "" && c.OtherName != other {
			name = fmt.Sprintf("%s, %d sessions", c.OtherName, c.Sessions)
		}
		sets = append(sets, report.BarSet{
			Name:   name,
			Values: []float64{c.CPU, c.P50, c.P99, c.RSS, c.Delivered},
		})
	}
	if len(sets) == 0 {
		return errors.New("nothing to draw")
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("rooms: %s ÷ %s at the same load (1 = equal)", other, base)
	if err := report.WriteBars(f, title, "ratio", groups, sets, 1); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
