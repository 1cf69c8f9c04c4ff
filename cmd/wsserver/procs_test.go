package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestAdaptiveProcs runs the program idle: with -adaptive-procs (the
// default) it comes down to one processor and puts back what it found when
// it stops; with -adaptive-procs=false it leaves GOMAXPROCS alone.
func TestAdaptiveProcs(t *testing.T) {
	start := runtime.GOMAXPROCS(0)
	if start < 2 {
		t.Skip("one processor: nothing to adapt")
	}
	serve := func(args ...string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"-addr", "127.0.0.1:0", "-admin-addr", "", "-log-level", "error", "-policy", testPolicyFile(t)}, args...),
				func(string) string { return "" }, io.Discard)
		}()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run %q: %v", args, err)
			}
		}
	}

	stop := serve()
	waitFor(t, 20*time.Second, func() error {
		if n := runtime.GOMAXPROCS(0); n != 1 {
			return fmt.Errorf("GOMAXPROCS %d, want 1 on an idle server", n)
		}
		return nil
	})
	stop()
	if n := runtime.GOMAXPROCS(0); n != start {
		t.Errorf("GOMAXPROCS after run returned: %d, want the %d it found", n, start)
	}

	stop = serve("-adaptive-procs=false")
	// Longer than the adaptive server took to come down: a second of
	// low load.
	time.Sleep(2 * time.Second)
	if n := runtime.GOMAXPROCS(0); n != start {
		t.Errorf("GOMAXPROCS with -adaptive-procs=false: %d, want %d untouched", n, start)
	}
	stop()
}

// The -adaptive-procs-* settings reach the policy; negative ones stop
// start-up naming the setting.
func TestAdaptiveProcsSettings(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		hold        int
		check, wait time.Duration
	}{
		{nil, 50, 5 * time.Millisecond, time.Millisecond},
		{[]string{"-adaptive-procs-hold", "0", "-adaptive-procs-wait", "0"}, 0, 0, 0},
		{[]string{"-adaptive-procs-hold", "2s", "-adaptive-procs-wait", "3ms"}, 20, 5 * time.Millisecond, 3 * time.Millisecond},
	} {
		var st settings
		if err := st.parse(tt.args, func(string) string { return "" }, io.Discard); err != nil {
			t.Fatal(err)
		}
		p := st.procsPolicy(4)
		if p.Max != 4 || p.Hold != tt.hold || p.Check != tt.check || p.Wait != tt.wait {
			t.Errorf("%q: policy %+v, want hold %d, check %v, wait %v", tt.args, p, tt.hold, tt.check, tt.wait)
		}
	}
	for _, name := range []string{"adaptive-procs-hold", "adaptive-procs-wait"} {
		var st settings
		if err := st.parse([]string{"-" + name, "-1s"}, func(string) string { return "" }, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := st.validate(); err == nil || !strings.Contains(err.Error(), "-"+name+" ("+envName(name)+") -1s: must not be negative") {
			t.Errorf("-%s -1s: validate %v", name, err)
		}
	}
}
