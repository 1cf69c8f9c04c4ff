// Package testproc runs a server binary for tests: it starts the process
// with its output captured, waits until the server is ready or has exited,
// and stops it. It also finds a free loopback port for the server to
// listen on.
//
// It knows nothing of any particular server: testredis and testnginx say
// how to start theirs and how to tell that it is ready.
package testproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/syncbuf"
)

// ErrExited reports that the process ended before it was ready.
var ErrExited = errors.New("testproc: process exited")

// FreePort asks the kernel for an unused TCP port on 127.0.0.1 and fails
// the test if there is none. Another process may take the port before the
// server binds it; the server then fails to start with its own message.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testproc: no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is one started process whose standard output and error are
// captured. Its methods are safe for concurrent use; Kill and Stop may be
// called any number of times.
type Process struct {
	cmd *exec.Cmd
	out syncbuf.Buffer
	// exited is closed once cmd has been waited for; cmd.ProcessState is
	// set by then.
	exited chan struct{}
}

// Start starts cmd with its standard output and error going to a buffer
// that Output returns, and waits for the process in the background. cmd
// must not have been started, and its Stdout and Stderr are replaced. A
// process started with SysProcAttr.Setpgid (see OwnGroup) leads a process
// group of its own, which Stop kills whole.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Output returns what the process has written to its standard output and
// error so far.
func (p *Process) Output() string {
	return p.out.String()
}

// Exited returns a channel that is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} {
	return p.exited
}

// WaitReady calls ready, pausing poll.Interval between calls, until it
// returns nil, the process exits, or timeout has passed. It returns nil
// once ready, an error wrapping ErrExited (with the exit status) if the
// process exited first, and otherwise ready's last error.
func (p *Process) WaitReady(timeout time.Duration, ready func() error) error {
	return poll.Wait(timeout, func() error {
		select {
		case <-p.exited:
			return poll.Stop(fmt.Errorf("%w: %v", ErrExited, p.cmd.ProcessState))
		default:
		}
		return ready()
	})
}

// Kill kills the process at once (SIGKILL) and waits for it to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Signal sends sig to the process and returns at once, for a signal the
// process handles and lives on (SIGHUP to reload).
func (p *Process) Signal(sig os.Signal) error {
	return p.cmd.Process.Signal(sig)
}

// Stop sends sig and waits for the process to exit. If it has not after
// grace, Stop kills it (SIGKILL), with its whole process group if it leads
// one, and waits.
func (p *Process) Stop(sig os.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	if !p.killGroup() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}
