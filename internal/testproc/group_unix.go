//go:build unix

package testproc

import (
	"os/exec"
	"syscall"
)

// killGroup kills the process group the process leads, if it was started
// with SysProcAttr.Setpgid, and reports whether it did.
func (p *Process) killGroup() bool {
	if attr := p.cmd.SysProcAttr; attr == nil || !attr.Setpgid {
		return false
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	return true
}

// OwnGroup makes cmd start as the leader of a process group of its own
// (SysProcAttr.Setpgid), which Stop kills whole.
func OwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
