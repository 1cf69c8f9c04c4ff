//go:build !unix

package testproc

import "os/exec"

// killGroup reports false: without Unix process groups there is no group
// to kill, only the process.
func (p *Process) killGroup() bool { return false }

// OwnGroup does nothing: without Unix process groups, Stop kills the
// process alone.
func OwnGroup(cmd *exec.Cmd) {}
