// Package testnginx runs a real nginx for tests: it writes a configuration
// into a private directory, checks it with `nginx -t`, starts nginx in the
// foreground and stops it when the test ends.
//
// The directory is nginx's prefix (-p), so relative paths in the
// configuration (pid, error_log, access_log, *_temp_path) land inside it and
// a test running as root touches nothing under /var. Startup messages go to
// the test's output (-e stderr), not to the compiled-in log path. A missing
// nginx binary fails the test (it is never skipped): a test that silently
// skips proves nothing.
package testnginx

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
)

// StartTimeout bounds how long Start waits for nginx to accept connections,
// and StopTimeout how long a stop waits for it to exit before killing it.
// nginx normally needs a few milliseconds for either; the bounds are
// generous because the test machine is shared and noisy.
const (
	StartTimeout = 10 * time.Second
	StopTimeout  = 10 * time.Second
)

// confName is the configuration's file name inside the server directory.
const confName = "nginx.conf"

// includeName is where an http-context file is written, relative to the
// server directory.
const includeName = "conf.d/stompgate.conf"

// debianMain is the nginx.conf that includes an http-context file: the
// http block of Debian 12's /etc/nginx/nginx.conf, with the files nginx
// writes moved into the server directory. mime.types is the system's when
// it is installed, as on Debian.
const debianMain = `pid nginx.pid;
error_log error.log;
events {
    worker_connections 768;
}
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    %s
    default_type application/octet-stream;
    ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;
    ssl_prefer_server_ciphers on;
    access_log access.log;
    gzip on;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    include conf.d/*.conf;
}
`

// httpBlockRE finds an http block, which only a complete nginx.conf has.
var httpBlockRE = regexp.MustCompile(`(?m)^\s*http\s*\{`)

// installHint is the advice printed when the binary is missing.
const installHint = "testnginx: nginx not found in PATH or at /usr/sbin/nginx: install it with " +
	"`apt-get install -y nginx` (Debian package nginx, 1.17.6 or later), " +
	"or run the project's test command, which installs it"

// Server is one nginx master process owned by a test.
type Server struct {
	// Addr is the host:port of the configuration's first listen directive,
	// with a missing or wildcard host replaced by 127.0.0.1.
	Addr string
	// URL is "http://" + Addr.
	URL string
	// Dir is the prefix directory holding nginx.conf; relative paths in the
	// configuration resolve against it.
	Dir string

	tb   testing.TB
	proc *testproc.Process // the master process
}

// Binary returns the path of the nginx executable: "nginx" from PATH, or
// /usr/sbin/nginx, which is outside PATH for some users. It fails the test
// if neither exists.
func Binary(tb testing.TB) string {
	tb.Helper()
	if path, err := exec.LookPath("nginx"); err == nil {
		return path
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	tb.Fatal(installHint)
	return ""
}

// FreePort asks the kernel for an unused TCP port on 127.0.0.1. Another
// process may take it before nginx binds it; Start then fails with nginx's
// own message.
func FreePort(tb testing.TB) int {
	tb.Helper()
	return testproc.FreePort(tb)
}

// Check writes conf into a fresh directory and runs `nginx -t` on it. It
// returns nil when nginx accepts the configuration, and otherwise an error
// carrying nginx's output. It fails the test only when nginx is missing or
// cannot be run.
func Check(tb testing.TB, conf []byte) error {
	tb.Helper()
	bin := Binary(tb)
	dir := makeDir(tb)
	writeConf(tb, dir, conf)
	return runTest(bin, dir)
}

// Start writes conf into a fresh directory, checks it with `nginx -t`, runs
// `nginx -c nginx.conf -p <dir> -e stderr -g 'daemon off;'` and waits until
// the address of the first listen directive accepts connections. It
// registers a cleanup that stops nginx and fails the test if any step
// fails. conf must not contain a daemon directive, and should use relative
// paths (or paths under Dir) for files nginx writes.
func Start(tb testing.TB, conf []byte) *Server {
	tb.Helper()
	bin := Binary(tb)
	addr, err := listenAddr(conf)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: addr, URL: "http://" + addr, tb: tb}
	s.Dir = makeDir(tb)
	writeConf(tb, s.Dir, conf)
	if err := runTest(bin, s.Dir); err != nil {
		tb.Fatal(err)
	}

	cmd := exec.Command(bin, "-c", confName, "-p", s.Dir, "-e", "stderr", "-g", "daemon off;")
	cmd.Dir = s.Dir
	// Own process group, so that a hung nginx can be killed with its
	// workers.
	testproc.OwnGroup(cmd)
	proc, err := testproc.Start(cmd)
	if err != nil {
		tb.Fatalf("testnginx: starting nginx: %v", err)
	}
	s.proc = proc
	tb.Cleanup(s.cleanup)

	err = proc.WaitReady(StartTimeout, func() error {
		conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	if err != nil {
		// The cleanup logs nginx's output and log files.
		tb.Fatalf("testnginx: nginx on %s did not accept connections: %v", s.Addr, err)
	}
	return s
}

// Stop stops nginx (SIGTERM, a fast shutdown that closes open WebSocket
// tunnels instead of waiting for them) and waits for the master to exit,
// killing the process group after StopTimeout. Stop on a stopped server
// does nothing.
func (s *Server) Stop() {
	s.proc.Stop(syscall.SIGTERM, StopTimeout)
}

// Output returns what nginx has written to its standard output and error
// so far: startup messages, and the error log if the configuration sends it
// to stderr.
func (s *Server) Output() string {
	return s.proc.Output()
}

// ReadFile returns the content of a file in Dir, such as a log the
// configuration writes there, or "" if it cannot be read.
func (s *Server) ReadFile(name string) string {
	data, err := os.ReadFile(filepath.Join(s.Dir, name))
	if err != nil {
		return ""
	}
	return string(data)
}

// cleanup stops nginx and, when the test failed, logs nginx's output and
// log files to help find out why.
func (s *Server) cleanup() {
	s.Stop()
	if s.tb.Failed() {
		s.tb.Logf("testnginx: nginx output:\n%s%s", s.Output(), s.logs())
	}
}

// logs returns the *.log files in Dir, each under a header line.
func (s *Server) logs() string {
	names, _ := filepath.Glob(filepath.Join(s.Dir, "*.log"))
	var b strings.Builder
	for _, name := range names {
		data, _ := os.ReadFile(name)
		fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(name), data)
	}
	return b.String()
}

// makeDir creates the server directory, removed when the test ends. It is
// made world-readable because nginx's workers run as an unprivileged user
// when the tests run as root, and must reach the temp directories nginx
// creates inside it; t.TempDir's parent is private to root.
func makeDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "testnginx-")
	if err != nil {
		tb.Fatalf("testnginx: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatalf("testnginx: %v", err)
	}
	return dir
}

// writeConf writes conf as dir/nginx.conf, or, when conf has no http
// block, as dir/conf.d/stompgate.conf included from a Debian-like
// nginx.conf.
func writeConf(tb testing.TB, dir string, conf []byte) {
	tb.Helper()
	if !httpBlockRE.Match(conf) {
		if err := os.MkdirAll(filepath.Join(dir, "conf.d"), 0o755); err != nil {
			tb.Fatalf("testnginx: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, includeName), conf, 0o644); err != nil {
			tb.Fatalf("testnginx: %v", err)
		}
		mime := "# no /etc/nginx/mime.types"
		if _, err := os.Stat("/etc/nginx/mime.types"); err == nil {
			mime = "include /etc/nginx/mime.types;"
		}
		conf = []byte(fmt.Sprintf(debianMain, mime))
	}
	if err := os.WriteFile(filepath.Join(dir, confName), conf, 0o644); err != nil {
		tb.Fatalf("testnginx: %v", err)
	}
}

// runTest runs `nginx -t` on dir/nginx.conf.
func runTest(bin, dir string) error {
	cmd := exec.Command(bin, "-t", "-q", "-c", confName, "-p", dir, "-e", "stderr")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("testnginx: nginx -t rejected the configuration: %v\n%s", err, out)
	}
	return nil
}

// listenRE finds the address of a listen directive.
var listenRE = regexp.MustCompile(`(?m)^\s*listen\s+([^\s;]+)`)

// listenAddr returns the address to dial for the first listen directive in
// conf.
func listenAddr(conf []byte) (string, error) {
	m := listenRE.FindSubmatch(conf)
	if m == nil {
		return "", errors.New("testnginx: the configuration has no listen directive")
	}
	addr := string(m[1])
	if _, err := strconv.Atoi(addr); err == nil {
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("testnginx: listen %q: %v", addr, err)
	}
	if host == "" || host == "*" || host == "0.0.0.0" {
		host = "127.0.0.1"
	}
	if host == "::" {
		host = "::1"
	}
	return net.JoinHostPort(host, port), nil
}
