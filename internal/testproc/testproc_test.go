package testproc

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start runs script with sh, failing the test if it cannot, and kills the
// process when the test ends.
func start(t *testing.T, script string, setpgid bool) *Process {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if setpgid {
		OwnGroup(cmd)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(p.Kill)
	return p
}

func exited(p *Process) bool {
	select {
	case <-p.Exited():
		return true
	default:
		return false
	}
}

func TestFreePort(t *testing.T) {
	port := FreePort(t)
	if port <= 0 || port > 65535 {
		t.Fatalf("got port %d, want 1-65535", port)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listening on the free port %d: %v", port, err)
	}
	l.Close()
}

var errNotReady = errors.New("not ready")

func TestWaitReady(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		readyAfter int // calls of ready until it holds; 0: never
		timeout    time.Duration
		wantErr    error
		wantOutput string
	}{
		{"ready", "echo started; exec sleep 60", 3, time.Minute, nil, "started\n"},
		{"exits first", "echo bad flag >&2; exit 3", 0, time.Minute, ErrExited, "bad flag\n"},
		{"times out", "exec sleep 60", 0, 0, errNotReady, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.script, false)
			calls := 0
			err := p.WaitReady(tt.timeout, func() error {
				calls++
				if tt.readyAfter > 0 && calls >= tt.readyAfter {
					return nil
				}
				return errNotReady
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == ErrExited && !strings.Contains(err.Error(), "exit status 3") {
				t.Errorf("got error %q, want the exit status 3 in it", err)
			}
			p.Kill() // all output is in once the process has been waited for
			if got := p.Output(); got != tt.wantOutput {
				t.Errorf("got output %q, want %q", got, tt.wantOutput)
			}
		})
	}
}

func TestKill(t *testing.T) {
	p := start(t, "exec sleep 60", false)
	if exited(p) {
		t.Fatal("process exited before Kill")
	}
	p.Kill()
	if !exited(p) {
		t.Fatal("process still running after Kill")
	}
	p.Kill() // idempotent
}

func TestStop(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		setpgid bool
	}{
		// sleep ends on SIGTERM.
		{"signal ends it", "echo ready; exec sleep 60", false},
		// sh ignores SIGTERM; its group, sleep included, is killed after
		// the grace time.
		{"killed with its group", "trap '' TERM; echo ready; sleep 60 & wait", true},
		// The same without a group of its own: only sh is killed.
		{"killed alone", "trap '' TERM; echo ready; while :; do sleep 0.01; done", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.script, tt.setpgid)
			// The signal must come after sh has set its trap.
			err := p.WaitReady(time.Minute, func() error {
				if !strings.Contains(p.Output(), "ready") {
					return errNotReady
				}
				return nil
			})
			if err != nil {
				t.Fatalf("WaitReady: %v", err)
			}
			p.Stop(syscall.SIGTERM, 100*time.Millisecond)
			if !exited(p) {
				t.Fatal("process still running after Stop")
			}
			p.Stop(syscall.SIGTERM, 0) // idempotent
		})
	}
}
