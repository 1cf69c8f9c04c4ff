// Package wsservertest runs the wsserver binary for the examples' tests:
// it builds cmd/wsserver, starts it on free loopback ports with the
// server API on, and publishes through that API.
package wsservertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
)

// Key is the -api-key the server is started with.
const Key = "example-test-key"

// StartTimeout bounds building and starting the server: building takes
// the longest, on a cold cache and two shared cores.
const StartTimeout = 3 * time.Minute

// Server is one running wsserver.
type Server struct {
	// Base is the public listener's URL, http://127.0.0.1:port.
	Base string
	// WS is the WebSocket endpoint, ws://127.0.0.1:port/ws.
	WS string
	// Admin is the admin listener's URL (metrics, the server API).
	Admin string
	// Proc is the process.
	Proc *testproc.Process

	// hc sends the test's requests; its idle connections are closed when
	// the test ends, so that no goroutine outlives it.
	hc *http.Client
}

// Start builds cmd/wsserver, starts it with -api-key Key, the given args
// and free loopback ports, and waits until /readyz answers 200. The
// server is stopped when the test ends. The test fails if the server
// cannot be built or started.
func Start(t *testing.T, args ...string) *Server {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "wsserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/stompgate/stompgate/cmd/wsserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building wsserver: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	admin := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	all := append([]string{"-addr", addr, "-admin-addr", admin, "-api-key", Key, "-log-level", "warn"}, args...)
	cmd := exec.Command(bin, all...)
	testproc.OwnGroup(cmd)
	p, err := testproc.Start(cmd)
	if err != nil {
		t.Fatalf("starting wsserver: %v", err)
	}
	t.Cleanup(func() { p.Stop(syscall.SIGTERM, 10*time.Second) })
	s := &Server{Base: "http://" + addr, WS: "ws://" + addr + "/ws", Admin: "http://" + admin, Proc: p,
		hc: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	t.Cleanup(s.hc.CloseIdleConnections)
	err = p.WaitReady(StartTimeout, func() error {
		resp, err := s.hc.Get(s.Base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("wsserver %q not ready: %v\n%s", all, err, p.Output())
	}
	return s
}

// Publish posts body to dest through the server API, as text when
// binary is false and as body_base64 when it is true, and returns how
// many local subscribers took it. A refused request fails the test.
func (s *Server) Publish(t *testing.T, dest string, body []byte, binary bool) int {
	t.Helper()
	req := map[string]string{"destination": dest}
	if binary {
		req["body_base64"] = base64.StdEncoding.EncodeToString(body)
	} else {
		req["body"] = string(body)
	}
	var out struct {
		Delivered int `json:"delivered"`
	}
	s.API(t, http.MethodPost, "/api/v1/publish", req, http.StatusAccepted, &out)
	return out.Delivered
}

// Get fetches base+path (Base or Admin) with the test's client and
// returns the response; the caller closes its body.
func (s *Server) Get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := s.hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

// API sends a request to the server API (in, when not nil, as its JSON
// body), fails the test unless the answer has status want, and decodes
// the answer into out when out is not nil.
func (s *Server) API(t *testing.T, method, path string, in any, want int, out any) {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.Admin+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+Key)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s %s, want %d", method, path, resp.Status, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}
