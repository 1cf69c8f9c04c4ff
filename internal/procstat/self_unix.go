//go:build unix

package procstat

import (
	"syscall"
	"time"
)

// SelfCPU returns this process's user+system CPU time so far, or 0 if the
// system does not say.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
