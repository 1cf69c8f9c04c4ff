package scenario

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of the processes reconnect-storm starts, each with its reason.
const (
	// procReadyTimeout bounds a server's start: wsserver and redis-server
	// answer within a second; a minute covers a loaded machine.
	procReadyTimeout = time.Minute
	// procStopGrace is how long a stopped process may take to exit
	// before it is killed: wsserver's default -shutdown-timeout is 10 s.
	procStopGrace = 15 * time.Second
	// procOutputMax is how much of a process's output is kept for the
	// error that reports its failure.
	procOutputMax = 16 << 10
)

// tailBuffer keeps the last procOutputMax bytes written to it. It is safe
// for concurrent use.
type tailBuffer struct {
	mu sync.Mutex // guards b
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - procOutputMax; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// proc is a server process the scenario started and must stop.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    tailBuffer
	exited chan struct{} // closed once cmd has been waited for
}

// startProc starts bin with args, its output kept in a tail buffer.
func startProc(name, bin string, args ...string) (*proc, error) {
	p := &proc{name: name, cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid returns the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitReady calls ready every 50 ms until it returns nil, the process
// exits, or procReadyTimeout passes.
func (p *proc) waitReady(ctx context.Context, ready func() error) error {
	deadline := time.Now().Add(procReadyTimeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v):\n%s", p.name, p.cmd.ProcessState, p.out.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %v\n%s", p.name, procReadyTimeout, err, p.out.String())
		}
	}
}

// kill ends the process at once (SIGKILL) and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop asks the process to end (SIGTERM), waits up to grace and then
// kills it. It may be called after kill or another stop.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.kill()
		return
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
	}
}

// freeAddr returns a loopback address with a port the kernel just had
// free. Another process may take it first; the server then fails to
// start and says so.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startRedis starts redis-server on a free loopback port, without
// persistence, and returns it with its URL.
func startRedis(ctx context.Context) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	p, err := startProc("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--maxclients", "1000")
	if err != nil {
		return nil, "", err
	}
	err = p.waitReady(ctx, func() error { return redisPing(addr) })
	if err != nil {
		p.kill()
		return nil, "", err
	}
	return p, "redis://" + addr + "/0", nil
}

// redisPing sends PING to the Redis at addr and wants PONG.
func redisPing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %q", strings.TrimSpace(line))
	}
	return nil
}

// wsserverProc is one wsserver instance: its process and addresses.
type wsserverProc struct {
	*proc
	addr      string // the public listener
	adminAddr string // the admin listener (/metrics)
}

// wsURL returns the instance's STOMP endpoint.
func (w *wsserverProc) wsURL() string { return "ws://" + w.addr + "/ws" }

// metricsURL returns the instance's Prometheus page.
func (w *wsserverProc) metricsURL() string { return "http://" + w.adminAddr + "/metrics" }

// startWsserver starts the wsserver binary bin on free loopback ports,
// sharing redisURL, with extra (the scenario's -server-args) last so
// that they override anything before them, and waits for /healthz.
func startWsserver(ctx context.Context, name, bin, redisURL string, extra []string) (*wsserverProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"-addr", addr, "-admin-addr", admin, "-redis-url", redisURL, "-log-level", "error"}
	p, err := startProc(name, bin, append(args, extra...)...)
	if err != nil {
		return nil, err
	}
	w := &wsserverProc{proc: p, addr: addr, adminAddr: admin}
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	err = p.waitReady(ctx, func() error {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		p.kill()
		return nil, err
	}
	return w, nil
}

// peakRSS reads VmHWM, the peak resident set of process pid, from
// /proc/<pid>/status; it fails where there is no /proc.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, errors.New("/proc status: no VmHWM line")
}
