//go:build unix

package chart

import "syscall"

// fileLimit is the hard RLIMIT_NOFILE of this process, which the Go
// runtime of a child raises its soft limit to.
func fileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	return l.Max, nil
}
