package handshake

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRefusalLogSummarises refuses a storm and checks that the log gets
// one line per interval, with the total, the addresses and the busiest
// first, and nothing while refusals stay within an interval.
func TestRefusalLogSummarises(t *testing.T) {
	var buf bytes.Buffer
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	l := &refusalLog{logger: slog.New(slog.NewTextHandler(&buf, nil)), now: func() time.Time { return now }}
	for i := range 3000 {
		now = t0.Add(time.Duration(i) * time.Millisecond)
		l.refused(fmt.Sprintf("192.0.2.%d", i%7))
		l.refused("203.0.113.9")
	}
	if buf.Len() != 0 {
		t.Fatalf("logged within the first interval:\n%s", buf.String())
	}
	now = t0.Add(refusalLogInterval + time.Second)
	l.refused("198.51.100.1")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{"handshakes refused", "refused=6000", "addresses=8", `top="203.0.113.9=3000 192.0.2.0=429`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %q lacks %q", lines[0], want)
		}
	}
	// Addresses past the bound are counted together, not remembered.
	buf.Reset()
	for i := range refusalLogMaxIPs + 500 {
		l.refused(fmt.Sprintf("10.%d.%d.1", i/256, i%256))
	}
	if got := len(l.byIP); got != refusalLogMaxIPs {
		t.Fatalf("%d addresses remembered, want the bound %d", got, refusalLogMaxIPs)
	}
}
