package metrics

import (
	"runtime"
	"testing"
)

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		info BuildInfo
		want []string // label pairs of the one series
	}{
		{
			name: "stamped",
			info: BuildInfo{Version: "v0.2.0", Revision: "3fdcbc7", GoVersion: "go1.26.8"},
			want: []string{"version", "v0.2.0", "revision", "3fdcbc7", "goversion", "go1.26.8"},
		},
		{
			name: "zero value",
			want: []string{"version", "unknown", "revision", "unknown", "goversion", runtime.Version()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, reg := newTestMetrics(t, Config{Build: tt.info})
			if got := sample(t, reg, "stompgate_build_info", tt.want...); got != 1 {
				t.Errorf("stompgate_build_info{%s} = %v, want 1", labelKey(tt.want...), got)
			}
			if n := len(gather(t, reg)["stompgate_build_info"].GetMetric()); n != 1 {
				t.Errorf("stompgate_build_info has %d series, want 1", n)
			}
		})
	}
}
