// Package procstat reads a process's CPU time and resident memory, for
// the load tools that measure what a server costs.
//
// CPU and RSS read another process's /proc entry, so they work on Linux
// only; elsewhere they return ErrUnsupported, and a caller reads what the
// server's metrics page says instead. SelfCPU works wherever the system reports
// the process's own CPU time (every Unix, and Windows).
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"
)

// ErrUnsupported is returned by CPU and RSS where there is no /proc to
// read them from: on every system but Linux.
var ErrUnsupported = fmt.Errorf("procstat: not supported on %s (reads /proc): %w", runtime.GOOS, errors.ErrUnsupported)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat: no command field")
	}
	// After ") " come field 3 (state) onward; utime is field 14.
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command, want at least 13", len(fields))
	}
	ut, err1 := strconv.ParseUint(string(fields[11]), 10, 64)
	st, err2 := strconv.ParseUint(string(fields[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat: utime %q stime %q are not numbers", fields[11], fields[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

func parseStatusRSS(b []byte) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("/proc status: VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: VmRSS line %q", line)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no VmRSS line")
}
