package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/metrics"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name    string
		stamped metrics.BuildInfo
		bi      debug.BuildInfo
		want    metrics.BuildInfo
	}{
		{
			name:    "stamped by make",
			stamped: metrics.BuildInfo{Version: "v0.2.0", Revision: "3fdcbc7", GoVersion: "go1"},
			bi:      debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("ffff", "true")},
			want:    metrics.BuildInfo{Version: "v0.2.0", Revision: "3fdcbc7", GoVersion: "go1.26.8"},
		},
		{
			name: "go install module@version",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
			want: metrics.BuildInfo{Version: "v0.2.0", GoVersion: "go1.26.8"},
		},
		{
			name: "go build in a clone with changes",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261121120000-3fdcbc7a1b2c+dirty"}, Settings: vcs("3fdcbc7a1b2c", "true")},
			want: metrics.BuildInfo{Version: release + "-dev", Revision: "3fdcbc7a1b2c-dirty", GoVersion: "go1.26.8"},
		},
		{
			name: "go build in a clone past a tag",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.1-0.20261121120000-3fdcbc7a1b2c"}, Settings: vcs("3fdcbc7a1b2c", "false")},
			want: metrics.BuildInfo{Version: "v0.1.1-0.20261121120000-3fdcbc7a1b2c", Revision: "3fdcbc7a1b2c", GoVersion: "go1.26.8"},
		},
		{
			name: "clean clone",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("3fdcbc7a1b2c", "false")},
			want: metrics.BuildInfo{Version: release + "-dev", Revision: "3fdcbc7a1b2c", GoVersion: "go1.26.8"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := fromBuildInfo(tt.stamped, &tt.bi); got != tt.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVersionRequested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-version"}, true},
		{[]string{"--version"}, true},
		{[]string{"-addr", ":8080", "-version"}, true},
		{[]string{"--", "-version"}, false},
		{[]string{"-versions"}, false},
		{[]string{"nginx-config"}, false},
	}
	for _, tt := range tests {
		if got := versionRequested(tt.args); got != tt.want {
			t.Errorf("versionRequested(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// `wsserver -version` prints one line and starts nothing, whatever the
// environment says.
func TestRunVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := map[string]string{"WSSERVER_ADDR": "bad address"}
	if err := run(context.Background(), []string{"-version"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("run -version: %v", err)
	}
	line := out.String()
	for _, want := range []string{"wsserver ", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH, "commit "} {
		if !strings.Contains(line, want) {
			t.Errorf("run -version printed %q, want it to contain %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("run -version printed %q, want one line", line)
	}
}

// The wired server exports its build as stompgate_build_info.
func TestBuildInfoMetric(t *testing.T) {
	base, _ := startApp(t)
	b := buildInfo()
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	key := fmt.Sprintf("stompgate_build_info{goversion=%q,revision=%q,version=%q}", b.GoVersion, rev, b.Version)
	if got, ok := scrape(t, base)[key]; !ok || got != 1 {
		t.Errorf("/metrics: %s = %v (present: %v), want 1", key, got, ok)
	}
}

// TestMakeVersion: the Makefile's VERSION is the git tag when the commit
// has one in its history, and otherwise the release constant with -dev,
// the same version an untagged go build reports.
func TestMakeVersion(t *testing.T) {
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", "../..", "version")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "VERSION=") })
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make version: %v", err)
	}
	got := strings.TrimSpace(string(out))
	want := release + "-dev"
	if tag, err := exec.Command("git", "-C", "../..", "describe", "--tags", "--match", "v[0-9]*", "--dirty").Output(); err == nil {
		want = strings.TrimSpace(string(tag))
	}
	if got != want {
		t.Errorf("make version = %q, want %q", got, want)
	}
}
