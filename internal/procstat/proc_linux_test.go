package procstat

import (
	"os"
	"testing"
)

// TestProcSelf reads this process's own /proc entry.
func TestProcSelf(t *testing.T) {
	if cpu, err := CPU(os.Getpid()); err != nil || cpu < 0 {
		t.Errorf("CPU(self) = %v, %v; want >= 0, nil", cpu, err)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("RSS(self) = %d, %v; want > 0, nil", rss, err)
	}
}
