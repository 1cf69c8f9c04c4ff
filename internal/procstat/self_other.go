//go:build !unix && !windows

package procstat

import "time"

// SelfCPU returns 0: this system does not report a process's CPU time.
func SelfCPU() time.Duration { return 0 }
