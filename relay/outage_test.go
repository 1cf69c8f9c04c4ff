package relay

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// logRecorder is a slog.Handler that keeps each record's level and
// message.
type logRecorder struct {
	mu    sync.Mutex
	lines []string // "WARN relay: ..."
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.lines = append(h.lines, r.Level.String()+" "+r.Message)
	h.mu.Unlock()
	return nil
}

// count returns how many lines start with level and contain substr.
func (h *logRecorder) count(level, substr string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.lines {
		if strings.HasPrefix(l, level+" ") && strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// An outage starts at the first failure on any path and ends once every
// path known when it started (or added during it) has succeeded again.
// A path that recovers first while another still fails, as the
// subscription connection and the publisher's pool do after a restart,
// does not end the outage and start a second one.
func TestOutagePaths(t *testing.T) {
	errDown := errors.New("connection refused")
	type step struct {
		op   string // "fail", "ok", "add", "remove"
		path string
	}
	tests := []struct {
		name        string
		paths       []string // added before the steps
		steps       []step
		wantOutages int
		wantActive  bool
	}{
		{
			name:        "one path fails and recovers",
			steps:       []step{{"fail", pathPublish}, {"fail", pathPublish}, {"ok", pathPublish}},
			wantOutages: 1,
		},
		{
			name:  "subscription back first, publisher fails once more, then back",
			paths: []string{"subscribe:0"},
			steps: []step{
				{"fail", "subscribe:0"}, {"fail", pathPublish},
				{"ok", "subscribe:0"}, {"fail", pathPublish}, {"ok", pathPublish},
			},
			wantOutages: 1,
		},
		{
			name:  "idle publisher is suspect until it has proven itself",
			paths: []string{"subscribe:0"},
			steps: []step{
				{"fail", "subscribe:0"}, {"ok", "subscribe:0"},
			},
			wantOutages: 1,
			wantActive:  true,
		},
		{
			name:  "idle publisher checked: the outage ends",
			paths: []string{"subscribe:0"},
			steps: []step{
				{"fail", "subscribe:0"}, {"ok", "subscribe:0"}, {"ok", pathPublish},
			},
			wantOutages: 1,
		},
		{
			name:        "a path added during the outage must succeed too",
			steps:       []step{{"fail", pathPublish}, {"add", "subscribe:3"}, {"ok", pathPublish}},
			wantOutages: 1,
			wantActive:  true,
		},
		{
			name:        "a removed path is not waited for",
			paths:       []string{"subscribe:0"},
			steps:       []step{{"fail", pathPublish}, {"ok", pathPublish}, {"remove", "subscribe:0"}},
			wantOutages: 1,
		},
		{
			name:        "a failure after the end is a second outage",
			steps:       []step{{"fail", pathPublish}, {"ok", pathPublish}, {"fail", pathPublish}},
			wantOutages: 2,
			wantActive:  true,
		},
		{
			name:  "successes without an outage log nothing",
			steps: []step{{"ok", pathPublish}, {"ok", "subscribe:0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &logRecorder{}
			obs := newCountingObserver()
			var o outage
			o.init(slog.New(logs), obs)
			for _, p := range tt.paths {
				o.add(p)
			}
			for _, s := range tt.steps {
				switch s.op {
				case "fail":
					o.failed(s.path, "test", errDown)
				case "ok":
					o.ok(s.path)
				case "add":
					o.add(s.path)
				case "remove":
					o.remove(s.path)
				}
			}
			active, entered := obs.inOutage()
			if entered != tt.wantOutages || active != tt.wantActive {
				t.Errorf("outages entered %d, active %v; want %d, %v", entered, active, tt.wantOutages, tt.wantActive)
			}
			wantEnds := tt.wantOutages
			if tt.wantActive {
				wantEnds--
			}
			if got := logs.count("WARN", "unreachable"); got != tt.wantOutages {
				t.Errorf("%d outage start lines, want %d", got, tt.wantOutages)
			}
			if got := logs.count("INFO", "reachable again"); got != wantEnds {
				t.Errorf("%d outage end lines, want %d", got, wantEnds)
			}
		})
	}
}
