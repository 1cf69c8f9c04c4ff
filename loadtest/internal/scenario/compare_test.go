package scenario

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/loadtest/internal/report"
)

// TestCompareThree: three servers per size, each other one against the
// baseline, with the p99.9 and server-part ratios.
func TestCompareThree(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r roomsReport) string {
		t.Helper()
		b, err := json.Marshal(Report{Scenario: "rooms", Rooms: &r})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sg := roomsReport{Sessions: 1000, DeliveredPerSec: 11000, ServerCPUPerDeliveredMicros: 10, RSSPerSessionKiB: 16,
		Latency: &report.LatencySummary{P50: 0.4, P99: 1, P999: 4}}
	sg.ServerPart = &report.LatencySummary{P99: 0.5}
	cf := roomsReport{Sessions: 1000, DeliveredPerSec: 11000, ServerCPUPerDeliveredMicros: 25, RSSPerSessionKiB: 128,
		Latency: &report.LatencySummary{P50: 0.4, P99: 1.5, P999: 6}}
	cf.ServerPart = &report.LatencySummary{P99: 1}
	rmq := roomsReport{Sessions: 1000, DeliveredPerSec: 11000, ServerCPUPerDeliveredMicros: 110, RSSPerSessionKiB: 320,
		Latency: &report.LatencySummary{P50: 2, P99: 10, P999: 20}}
	files := []string{write("sg.json", sg), write("cf.json", cf), write("rmq.json", rmq)}
	var out bytes.Buffer
	if err := RunCompare(t.Context(), append([]string{"-names", "sg,cf,rmq"}, files...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 1000 | **cf ÷ sg** | 1× | | 1× | 1.5× | 1.5× | 2× | **2.5×** | | 8× |",
		"| 1000 | **rmq ÷ sg** | 1× | | 5× | 10× | 5× | - | **11×** | | 20× |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare table:\n%s\nwant the row\n%s", out.String(), want)
		}
	}
	// The baseline's row appears once per size.
	if n := strings.Count(out.String(), "| 1000 | sg |"); n != 1 {
		t.Errorf("baseline row %d times, want once:\n%s", n, out.String())
	}
	if err := RunCompare(t.Context(), append([]string{"-names", "sg,cf,rmq"}, files[:2]...), io.Discard, io.Discard); err == nil {
		t.Error("compare of three names with two files succeeded")
	}
	if err := RunCompare(t.Context(), append([]string{"-names", "sg,,rmq"}, files...), io.Discard, io.Discard); err == nil {
		t.Error("compare with an empty name succeeded")
	}
}
