//go:build unix

package main

import (
	"fmt"
	"io"
	"syscall"
)

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit: idle
// opens one socket per session, and 10,000 sessions are past the usual
// soft limit of 1,024. A failure is reported and otherwise ignored; the
// dials that run out of descriptors count as errors.
func raiseFileLimit(stderr io.Writer) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(stderr, "loadtest: reading RLIMIT_NOFILE:", err)
		return
	}
	if lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(stderr, "loadtest: raising RLIMIT_NOFILE:", err)
	}
}
