// Package testredis starts a real redis-server for tests, on a free loopback
// port, with persistence off and a private temporary directory.
//
// A test that needs Redis calls Start; the server is killed when the test
// ends. A missing redis-server binary fails the test (it is never skipped),
// because a test that silently skips proves nothing.
package testredis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
)

// StartTimeout bounds how long Start and Restart wait for the server to
// answer PING. redis-server normally answers within a few milliseconds; the
// bound is generous because the test machine is shared and noisy.
const StartTimeout = 10 * time.Second

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
	// proc is the running process, nil after Kill; pid is its process
	// id, read from INFO once it answers; paused is true between Pause
	// and Resume. Guarded by mu.
	proc   *testproc.Process
	pid    int
	paused bool
}

// Start runs redis-server on a free 127.0.0.1 port with
// `--save "" --appendonly no --port N --bind 127.0.0.1 --dir <temp>` followed
// by args, waits until it answers PING, and registers a cleanup that kills
// it. It fails the test if the server cannot be started.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return startOnPort(tb, testproc.FreePort(tb), args...)
}

// startOnPort is Start on a chosen port.
func startOnPort(tb testing.TB, port int, args ...string) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatal(installHint)
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
	proc := s.proc
	s.proc, s.pid, s.paused = nil, 0, false
	s.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}

// Pause stops the process with SIGSTOP: it keeps its sockets open, the
// kernel still accepts connections for it, and nothing is answered until
// Resume. This is the half-open peer that only a bounded health check
// finds. Pause on a stopped server does nothing.
func (s *Server) Pause() {
	s.tb.Helper()
	s.signal(true)
}

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() {
	s.tb.Helper()
	s.signal(false)
}

// running reports whether the process runs and is not paused.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.paused
}

// signal pauses the process or continues it.
func (s *Server) signal(paused bool) {
	s.tb.Helper()
	s.mu.Lock()
	pid := s.pid
	if pid != 0 {
		s.paused = paused
	}
	s.mu.Unlock()
	if pid == 0 {
		return
	}
	if err := pauseProcess(pid, paused); err != nil {
		s.tb.Fatalf("testredis: pause %v of redis-server %d on %s: %v", paused, pid, s.Addr, err)
	}
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
	proc, err := testproc.Start(exec.Command("redis-server", args...))
	if err != nil {
		s.tb.Fatalf("testredis: starting redis-server: %v", err)
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()

	err = proc.WaitReady(StartTimeout, func() error { return ping(s.Addr) })
	if err != nil {
		s.Kill()
		s.tb.Fatalf("testredis: redis-server on %s did not answer PING: %v\n%s", s.Addr, err, proc.Output())
	}
	info, err := query(s.Addr, "INFO server")
	if err != nil {
		s.Kill()
		s.tb.Fatalf("testredis: INFO on %s: %v", s.Addr, err)
	}
	pid, err := infoField(info, "process_id")
	if err != nil {
		s.Kill()
		s.tb.Fatalf("testredis: INFO on %s: %v", s.Addr, err)
	}
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
}

// query sends one inline command and returns its bulk string reply.
func query(addr, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	rd := bufio.NewReader(conn)
	head, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(head, "$") {
		return "", fmt.Errorf("%s answered %q", cmd, head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return "", fmt.Errorf("%s answered %q", cmd, head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(rd, body); err != nil {
		return "", err
	}
	return string(body[:n]), nil
}

// infoField returns the integer field name of an INFO reply.
func infoField(info, name string) (int, error) {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("no %s in INFO", name)
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
