//go:build unix

package main

import "syscall"

// fileLimit returns the process's limit of open files (RLIMIT_NOFILE,
// soft; Go raises it to the hard limit at start) and whether there is
// one.
func fileLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	cur := uint64(rl.Cur) // int64 on some systems
	if cur == ^uint64(0) || cur > 1<<31 {
		return 0, false // unlimited, or as good as
	}
	return cur, true
}
