package server

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOriginLog: the first cross-origin refusal is logged at once, those
// within originLogInterval of the last line are only counted, and the
// next line carries their count.
func TestOriginLog(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	r := httptest.NewRequest("GET", "http://chat.example:8080/ws", nil)
	r.Header.Set("Origin", "http://chat.example:8080")
	r.Host = "chat.example"

	var l originLog
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		at       time.Duration
		wantLine bool
		wantSeen string // in the line: the refusals it reports since the last
	}{
		{0, true, "refused_since_last_line=0"},
		{time.Second, false, ""},
		{30 * time.Second, false, ""},
		{originLogInterval - time.Nanosecond, false, ""},
		{originLogInterval, true, "refused_since_last_line=3"},
		{originLogInterval + time.Second, false, ""},
		{3 * originLogInterval, true, "refused_since_last_line=1"},
	}
	for _, st := range steps {
		buf.Reset()
		l.refused(logger, r, t0.Add(st.at))
		line := buf.String()
		if got := line != ""; got != st.wantLine {
			t.Fatalf("refused(t0+%v): logged %v (%q), want %v", st.at, got, line, st.wantLine)
		}
		if !st.wantLine {
			continue
		}
		for _, want := range []string{"level=WARN", "origin=http://chat.example:8080", "host=chat.example", st.wantSeen, "$http_host"} {
			if !strings.Contains(line, want) {
				t.Errorf("refused(t0+%v): line %q lacks %q", st.at, line, want)
			}
		}
	}
}
