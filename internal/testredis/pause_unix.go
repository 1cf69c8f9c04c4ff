//go:build unix

package testredis

import "syscall"

// pauseProcess stops process pid (SIGSTOP) or continues it (SIGCONT).
func pauseProcess(pid int, pause bool) error {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	return syscall.Kill(pid, sig)
}
