//go:build !linux

package procstat

import "time"

// CPU returns ErrUnsupported: there is no /proc to read another process's
// CPU time from.
func CPU(pid int) (time.Duration, error) { return 0, ErrUnsupported }

// RSS returns ErrUnsupported: there is no /proc to read another process's
// resident set from.
func RSS(pid int) (int64, error) { return 0, ErrUnsupported }
