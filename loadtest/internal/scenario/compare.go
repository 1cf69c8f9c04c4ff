package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// RunCompare reads rooms reports (-json) in pairs, the baseline server's
// run first and the other server's run at the same size second, and
// prints a Markdown table of both servers' figures with the other's
// ratio to the baseline; -chart draws those ratios as bars.
//
//	loadtest compare -names stompgate,RabbitMQ -chart rooms.svg a1.json b1.json a5.json b5.json
func RunCompare(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := NewFlagSet("compare", stderr)
	names := fs.String("names", "baseline,other", "the two servers' names, baseline first")
	chart := fs.String("chart", "", "write an SVG bar chart of the ratios to this file")
	jsonOut := fs.Bool("json", false, "print the rows as JSON instead of Markdown")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, other, ok := strings.Cut(*names, ",")
	if !ok || base == "" || other == "" {
		return fmt.Errorf("-names %q: want two names separated by a comma", *names)
	}
	files := fs.Args()
	if len(files) == 0 || len(files)%2 != 0 {
		return fmt.Errorf("compare: want pairs of rooms reports (baseline, other), got %d files", len(files))
	}
	var rows []comparison
	for i := 0; i < len(files); i += 2 {
		a, err := readRooms(files[i])
		if err != nil {
			return err
		}
		b, err := readRooms(files[i+1])
		if err != nil {
			return err
		}
		rows = append(rows, compareRooms(a, b))
	}
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
	Baseline  *roomsReport `json:"baseline"`
	Other     *roomsReport `json:"other"`
	CPU       float64      `json:"cpu_per_delivered_ratio"`
	P50       float64      `json:"p50_ratio"`
	P99       float64      `json:"p99_ratio"`
	RSS       float64      `json:"rss_per_session_ratio"`
	Delivered float64      `json:"delivered_per_sec_ratio"`
}

func compareRooms(a, b *roomsReport) comparison {
	c := comparison{Sessions: a.Sessions, Baseline: a, Other: b}
	c.CPU = over(b.ServerCPUPerDeliveredMicros, a.ServerCPUPerDeliveredMicros)
	if a.Latency != nil && b.Latency != nil {
		c.P50 = over(b.Latency.P50, a.Latency.P50)
		c.P99 = over(b.Latency.P99, a.Latency.P99)
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

// writeComparison prints the Markdown table: per size, each server's
// figures, then the ratio row.
func writeComparison(w io.Writer, base, other string, rows []comparison) {
	fmt.Fprintln(w, "| sessions | server | delivered msg/s (offered) | delivery ratio | p50 ms | p99 ms | server CPU µs / delivered | server cores | server RSS MiB (KiB / session) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	ratio := func(v float64) string {
		if v == 0 {
			return "-"
		}
		return report.FormatValue(v) + "×"
	}
	for _, c := range rows {
		for _, s := range []struct {
			name string
			r    *roomsReport
		}{{base, c.Baseline}, {other, c.Other}} {
			r := s.r
			p50, p99 := "-", "-"
			if r.Latency != nil {
				p50, p99 = report.FormatValue(r.Latency.P50), report.FormatValue(r.Latency.P99)
			}
			fmt.Fprintf(w, "| %d | %s | %.0f (%.0f) | %.3f | %s | %s | %s | %.2f | %.0f (%.1f) |\n",
				r.Sessions, s.name, r.DeliveredPerSec, r.OfferedPerSec, r.DeliveryRatio, p50, p99,
				report.FormatValue(r.ServerCPUPerDeliveredMicros), r.ServerCPUCores, MiB(r.RSSEnd), r.RSSPerSessionKiB)
		}
		fmt.Fprintf(w, "| %d | **%s ÷ %s** | %s | | %s | %s | **%s** | | %s |\n",
			c.Sessions, other, base, ratio(c.Delivered), ratio(c.P50), ratio(c.P99), ratio(c.CPU), ratio(c.RSS))
	}
}

// writeComparisonChart draws the ratios, one group per figure and one
// bar per size.
func writeComparisonChart(path, base, other string, rows []comparison) error {
	groups := []string{"CPU per delivered msg", "p50 latency", "p99 latency", "RSS per session", "delivered msg/s"}
	var sets []report.BarSet
	for _, c := range rows {
		sets = append(sets, report.BarSet{
			Name:   fmt.Sprintf("%d sessions", c.Sessions),
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
