package procstat

import (
	"testing"
	"time"
)

func TestProcParsers(t *testing.T) {
	stat := []byte("4242 (ws server) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 12 0 100 0 0\n")
	cpu, err := parseStatCPU(stat)
	if err != nil || cpu != 3250*time.Millisecond {
		t.Errorf("parseStatCPU = %v, %v, want 3.25s, nil", cpu, err)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("parseStatCPU(short) = nil error, want one")
	}
	status := []byte("Name:\twsserver\nVmPeak:\t  10000 kB\nVmRSS:\t   20480 kB\nThreads:\t9\n")
	rss, err := parseStatusRSS(status)
	if err != nil || rss != 20480<<10 {
		t.Errorf("parseStatusRSS = %d, %v, want %d, nil", rss, err, 20480<<10)
	}
	if _, err := parseStatusRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("parseStatusRSS(no VmRSS) = nil error, want one")
	}
	if c := SelfCPU(); c <= 0 {
		t.Errorf("SelfCPU() = %v, want > 0", c)
	}
}
