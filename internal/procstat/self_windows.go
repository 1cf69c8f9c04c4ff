package procstat

import (
	"syscall"
	"time"
)

// SelfCPU returns this process's user+system CPU time so far, or 0 if the
// system does not say.
func SelfCPU() time.Duration {
	self, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(self, &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	return ticks(kernel) + ticks(user)
}

// ticks reads a Filetime holding a duration, in 100 ns units (not a date:
// Filetime.Nanoseconds would subtract the 1601 epoch).
func ticks(ft syscall.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
