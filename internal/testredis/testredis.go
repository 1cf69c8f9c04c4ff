// Package testredis starts a real redis-server for tests, on a free loopback
// port, with persistence off and a private temporary directory.
//
// A test that needs Redis calls Start; the server is killed when the test
// ends. A missing redis-server binary fails the test (it is never skipped),
// because a test that silently skips proves nothing.
package testredis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// StartTimeout bounds how long Start and Restart wait for the server to
// answer PING. redis-server normally answers within a few milliseconds; the
// bound is generous because the test machine is shared and noisy.
const StartTimeout = 10 * time.Second

// pollInterval is the pause between two PING attempts while waiting.
const pollInterval = 5 * time.Millisecond

// installHint is the advice printed when the binary is missing.
const installHint = "redis-server not found in PATH: install it with " +
	"`apt-get install -y redis-server` (Debian package redis-server), " +
	"or run the project's test command, which installs it"

// Server is one redis-server process owned by a test.
//
// Its methods are safe for concurrent use, but Kill and Restart are meant to
// be called from the test goroutine.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1. It does not change across
	// Restart.
	Addr string

	tb   testing.TB
	port int
	dir  string
	args []string

	mu sync.Mutex
	// cmd is the running process, nil after Kill. Guarded by mu.
	cmd *exec.Cmd
	// exited is closed when cmd has been waited for. Guarded by mu.
	exited chan struct{}
}

// Start runs redis-server on a free 127.0.0.1 port with
// `--save "" --appendonly no --port N --bind 127.0.0.1 --dir <temp>` followed
// by args, waits until it answers PING, and registers a cleanup that kills
// it. It fails the test if the server cannot be started.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatal(installHint)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatalf("testredis: no free port: %v", err)
	}
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		tb:   tb,
		port: port,
		dir:  tb.TempDir(),
		args: args,
	}
	tb.Cleanup(s.Kill)
	s.start()
	return s
}

// URL returns the server's address as a redis:// URL for database 0.
func (s *Server) URL() string {
	return "redis://" + s.Addr + "/0"
}

// Kill stops the server at once (SIGKILL) and waits for the process to exit.
// Clients see their connections refused until Restart. Kill on a stopped
// server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart kills the server if it runs and starts a new, empty one on the
// same port, waiting until it answers PING.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	s.start()
}

// start launches the process and waits for PING, failing the test if it
// exits or does not answer within StartTimeout.
func (s *Server) start() {
	s.tb.Helper()
	args := append([]string{
		"--save", "",
		"--appendonly", "no",
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
	}, s.args...)
	cmd := exec.Command("redis-server", args...)
	out := &lockedBuffer{}
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("testredis: starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	err := waitFor(StartTimeout, func() error {
		select {
		case <-exited:
			return errExited
		default:
		}
		return ping(s.Addr)
	})
	if err != nil {
		s.Kill()
		s.tb.Fatalf("testredis: redis-server on %s did not answer PING: %v\n%s", s.Addr, err, out.String())
	}
}

// errExited reports that the process ended before answering.
var errExited = errors.New("redis-server exited")

// waitFor calls check until it returns nil, errExited, or timeout passes,
// returning the last error.
func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || errors.Is(err, errExited) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollInterval)
	}
}

// ping sends one inline PING and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort asks the kernel for an unused loopback port. Another process may
// take it before redis-server binds it; Start then fails with redis-server's
// own message in the output.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
