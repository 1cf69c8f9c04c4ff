package main

import (
	"io"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestFlagValidation(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scenario", []string{"nope"}, `unknown scenario "nope"`},
		{"bad url", []string{"flood", "-url", "http://x/"}, "scheme must be ws or wss"},
		{"negative duration", []string{"throughput", "-duration", "-1s"}, "-duration -1s"},
		{"no load", []string{"flood", "-normal", "0", "-abusers", "0"}, "nothing to run"},
		{"storm off loopback", []string{"handshake-storm", "-url", "ws://10.1.2.3/ws", "-ips", "2"}, "loopback"},
		{"idle sessions", []string{"idle", "-sessions", "0"}, "-sessions 0"},
		{"rooms size", []string{"rooms", "-room-size", "0"}, "-room-size 0"},
		{"rooms heart-beat", []string{"rooms", "-heart-beat", "10ms"}, "-heart-beat 10ms"},
		{"frames per message", []string{"throughput", "-frames-per-message", "-1"}, "-frames-per-message -1"},
		{"reconnect-storm stop", []string{"reconnect-storm", "-stop", "restart"}, "-stop \"restart\""},
		{"reconnect-storm memory limit", []string{"reconnect-storm", "-server-args", "-memory-limit lots"}, "-memory-limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
