package procstat

import (
	"fmt"
	"os"
	"time"
)

// CPU returns the user+system CPU time of process pid from
// /proc/<pid>/stat (fields 14 and 15, after the parenthesised command,
// which may itself hold spaces and parentheses).
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// RSS returns the resident set size of process pid in bytes, from
// VmRSS in /proc/<pid>/status.
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(b)
}
