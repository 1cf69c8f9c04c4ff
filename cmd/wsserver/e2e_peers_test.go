package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// startServing wires the server as run does, from args on top of the
// defaults, and serves it with run's own http.Server (newHTTPServer, so
// its timeouts and header limit are the ones under test) on a free
// loopback port. It returns the base URL. Everything is shut down when the
// test ends.
func startServing(t *testing.T, args ...string) string {
	t.Helper()
	return serveAsRun(t, false, args...)
}

// serveAsRun is startServing, within the public listener's bounds
// (publicServer) when bounded.
func serveAsRun(t *testing.T, bounded bool, args ...string) string {
	t.Helper()
	if !slices.Contains(args, "-policy") {
		args = append([]string{"-policy", testPolicyFile(t)}, args...)
	}
	var st settings
	if err := st.parse(args, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatalf("settings %q: %v", args, err)
	}
	if err := st.validate(); err != nil {
		t.Fatalf("settings %q: %v", args, err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := newApp(&st, logger)
	if err != nil {
		t.Fatalf("newApp %q: %v", args, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.close()
		t.Fatalf("listen: %v", err)
	}
	var hs *http.Server
	if bounded {
		if hs, ln, err = a.publicServer(&st, ln, logger); err != nil {
			_ = ln.Close()
			a.close()
			t.Fatalf("publicServer: %v", err)
		}
	} else {
		hs = newHTTPServer(&st, a.handler, logger)
		ln = countTimeouts(ln, hs, a.metrics)
	}
	admin := httptest.NewServer(a.admin)
	t.Cleanup(admin.Close)
	registerAdmin(t, "http://"+ln.Addr().String(), admin.URL)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		if err := a.stomp.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("http Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		a.close()
	})
	return "http://" + ln.Addr().String()
}

// keepAlive is a plain HTTP/1.1 client connection kept open after its
// request, as a browser or a load balancer keeps one.
type keepAlive struct {
	conn net.Conn
	br   *bufio.Reader
}

// getKeepAlive opens a connection to base and does one GET path on it,
// leaving the connection open.
func getKeepAlive(t *testing.T, base, path string) *keepAlive {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), clientTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(clientTimeout))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: stompgate\r\n\r\n", path); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET %s: status %d, close %v; want 200 on a kept-alive connection", path, resp.StatusCode, resp.Close)
	}
	return &keepAlive{conn: conn, br: br}
}

// closedByServer waits up to timeout for the server to close conn: nil
// when it did, an error saying what happened instead.
func closedByServer(conn net.Conn, br *bufio.Reader, timeout time.Duration) error {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	_, err := br.ReadByte()
	switch {
	case err == nil:
		return errors.New("the server sent a byte instead of closing")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return nil
	case errors.Is(err, syscall.ECONNRESET):
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after %v", timeout)
	}
	return err
}

// TestIdleKeepAliveConnectionsClosed runs the attack for real: many
// keep-alive connections, one GET /healthz each, then idle. The server
// closes every one after -http-idle-timeout and counts it.
func TestIdleKeepAliveConnectionsClosed(t *testing.T) {
	const conns = 200
	base := startServing(t, "-http-idle-timeout", "300ms")
	var kas []*keepAlive
	for range conns {
		kas = append(kas, getKeepAlive(t, base, "/healthz"))
	}
	for i, ka := range kas {
		if err := closedByServer(ka.conn, ka.br, clientTimeout); err != nil {
			t.Fatalf("idle keep-alive connection %d of %d: %v", i+1, conns, err)
		}
	}
	// The scrapes' own keep-alive connections may idle out too.
	waitFor(t, 10*time.Second, func() error {
		if got := scrape(t, base)[`stompgate_http_timeouts_total{kind="idle"}`]; got < conns {
			return fmt.Errorf("idle timeouts counted: %v, want at least %d", got, conns)
		}
		return nil
	})
	if got := scrape(t, base)[`stompgate_http_timeouts_total{kind="read"}`]; got != 0 {
		t.Errorf("read timeouts counted: %v, want 0", got)
	}
}

// TestSlowRequestsAndBigHeaders checks the plain-request bounds for real:
// a client that trickles its request headers is cut off after
// -http-read-header-timeout, one that never finishes its body after
// -http-read-timeout, both counted, and a header block over
// -http-max-header-bytes is refused with 431.
func TestSlowRequestsAndBigHeaders(t *testing.T) {
	base := startServing(t,
		"-http-read-header-timeout", "200ms",
		"-http-read-timeout", "400ms",
		"-http-max-header-bytes", "4096")
	addr := strings.TrimPrefix(base, "http://")
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		t.Helper()
		conn, err := net.DialTimeout("tcp", addr, clientTimeout)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn, bufio.NewReader(conn)
	}

	t.Run("trickled headers", func(t *testing.T) {
		conn, br := dial(t)
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: stompgate\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		if err := closedByServer(conn, br, clientTimeout); err != nil {
			t.Fatalf("connection with unfinished headers: %v", err)
		}
	})
	t.Run("unfinished body", func(t *testing.T) {
		conn, br := dial(t)
		if _, err := io.WriteString(conn, "POST /healthz HTTP/1.1\r\nHost: stompgate\r\nContent-Length: 100\r\n\r\nx"); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(clientTimeout))
		// The mux answers 405 without reading the body; the server then
		// closes the connection when the body does not arrive in time.
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := closedByServer(conn, br, clientTimeout); err != nil {
			t.Fatalf("connection with an unfinished body: %v", err)
		}
	})
	t.Run("header block too large", func(t *testing.T) {
		conn, br := dial(t)
		big := strings.Repeat("a", 16<<10)
		if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: stompgate\r\nCookie: %s\r\n\r\n", big); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(clientTimeout))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("oversized headers: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("oversized headers: status %d, want 431", resp.StatusCode)
		}
	})
	waitFor(t, 10*time.Second, func() error {
		if got := scrape(t, base)[`stompgate_http_timeouts_total{kind="read"}`]; got != 2 {
			return fmt.Errorf("read timeouts counted: %v, want 2", got)
		}
		return nil
	})
}

// TestSessionOutlivesHTTPReadTimeout checks that the HTTP server's request
// deadlines do not follow a connection into its WebSocket session: a
// session opened on a server with short read timeouts keeps working after
// a plain connection opened later was cut off by them.
func TestSessionOutlivesHTTPReadTimeout(t *testing.T) {
	base := startServing(t,
		"-http-read-header-timeout", "200ms",
		"-http-read-timeout", "200ms",
		"-http-idle-timeout", "200ms")
	sub := dialStomp(t, wsURL(base))
	s := subscribe(t, sub, "/topic/after-timeout")

	// A connection that starts a request after the session opened and
	// never finishes it is closed by the read deadline: once it is, the
	// session's own connection has passed its deadlines too.
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), clientTimeout)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := closedByServer(conn, bufio.NewReader(conn), clientTimeout); err != nil {
		t.Fatalf("slow plain connection: %v", err)
	}

	if err := sub.Send("/topic/after-timeout", "text/plain", []byte("still here"), nil); err != nil {
		t.Fatalf("SEND after the read timeout: %v", err)
	}
	if m := nextMessage(t, s); string(m.Body) != "still here" {
		t.Errorf("body %q, want %q", m.Body, "still here")
	}
	disconnect(t, sub)
}

// TestSilentSessionsPinged runs the attack for real: sessions that
// negotiate heart-beat 0,0 and then never read. Each is pinged, does not
// answer, and is closed as ping_timeout, counted in /metrics, while a
// client that reads is left alone.
func TestSilentSessionsPinged(t *testing.T) {
	const silent = 20
	// Many sessions from one address in a second: more than -reconnect-limit.
	base := startServing(t, "-policy", manyHandshakesPolicy(t), "-reconnect-limit", "0", "-ping-interval", "100ms", "-ping-timeout", "200ms")
	reader := dialStomp(t, wsURL(base)) // heart-beat 0,0; go-stomp reads all the time
	for range silent {
		ws, resp, err := dialWS(t, wsURL(base))
		if err != nil {
			t.Fatalf("dial: %v (%s)", err, describe(resp))
		}
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		if err := ws.Write(ctx, websocket.MessageText, []byte("CONNECT\naccept-version:1.2\nheart-beat:0,0\n\n\x00")); err != nil {
			t.Fatalf("CONNECT: %v", err)
		}
		if _, b, err := ws.Read(ctx); err != nil || !strings.HasPrefix(string(b), "CONNECTED\n") {
			t.Fatalf("waiting for CONNECTED: %q, %v", b, err)
		}
		cancel()
		// From here on the client never reads: no pong.
	}
	waitFor(t, 15*time.Second, func() error {
		m := scrape(t, base)
		if got := m[`stompgate_sessions_closed_total{reason="ping_timeout"}`]; got != silent {
			return fmt.Errorf("sessions closed as ping_timeout: %v, want %d", got, silent)
		}
		if got := m["stompgate_sessions_active"]; got != 1 {
			return fmt.Errorf("sessions active: %v, want 1 (the client that reads)", got)
		}
		return nil
	})
	if err := reader.Send(stomptest.SyncDestination, "", nil, nil); err != nil {
		t.Fatalf("the reading client after the pings: %v", err)
	}
	disconnect(t, reader)
}

// TestInvalidUTF8Counted checks that both ways of sending bytes that are
// not UTF-8 end the session and are counted under the protocol-error kind
// invalid_utf8: a text message (closed with 1007) and a header in a
// binary message (ERROR, closed with 1008).
func TestInvalidUTF8Counted(t *testing.T) {
	base, _ := startApp(t)
	for _, tc := range []struct {
		typ  websocket.MessageType
		want websocket.StatusCode
	}{
		{websocket.MessageText, websocket.StatusInvalidFramePayloadData},
		{websocket.MessageBinary, websocket.StatusPolicyViolation},
	} {
		ws, resp, err := dialWS(t, wsURL(base))
		if err != nil {
			t.Fatalf("dial: %v (%s)", err, describe(resp))
		}
		ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
		defer cancel()
		for _, frame := range []string{
			"CONNECT\naccept-version:1.2\nheart-beat:0,0\n\n\x00",
			"SEND\ndestination:/topic/room\nx-name:caf\xe9\n\nhi\x00",
		} {
			if err := ws.Write(ctx, tc.typ, []byte(frame)); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		var code websocket.StatusCode
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				code = websocket.CloseStatus(err)
				break
			}
		}
		if code != tc.want {
			t.Errorf("%v message: close status %v, want %v", tc.typ, code, tc.want)
		}
	}
	waitFor(t, 10*time.Second, func() error {
		m := scrape(t, base)
		if got := m[`stompgate_protocol_error_closes_total{kind="invalid_utf8"}`]; got != 2 {
			return fmt.Errorf("protocol-error closes of kind invalid_utf8: %v, want 2", got)
		}
		if got := m[`stompgate_sessions_closed_total{reason="protocol_error"}`]; got != 2 {
			return fmt.Errorf("sessions closed as protocol_error: %v, want 2", got)
		}
		return nil
	})
}

// manyHandshakesPolicy writes a policy whose handshake zone lets one
// client open dozens of sessions at once, for tests whose attack is many
// sessions, not many handshakes.
func manyHandshakesPolicy(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	const p = `zones:
  - name: ws_handshake
    key: client_ip
    rate: 100r/s
    burst: 100
    routes:
      - {method: GET, path: /ws, upstream: ws}
`
	if err := os.WriteFile(path, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPeerSettingErrors runs the program with one bad idle or dead peer
// setting at a time: it must refuse to start, naming the setting.
func TestPeerSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"zero ping interval", []string{"-ping-interval", "0s"}, nil, "-ping-interval"},
		{"zero ping timeout", []string{"-ping-timeout", "0s"}, nil, "-ping-timeout"},
		{"negative ping timeout in env", nil, map[string]string{"WSSERVER_PING_TIMEOUT": "-1s"}, "WSSERVER_PING_TIMEOUT"},
		{"zero idle timeout", []string{"-http-idle-timeout", "0s"}, nil, "-http-idle-timeout"},
		{"zero read timeout", []string{"-http-read-timeout", "0s"}, nil, "-http-read-timeout"},
		{"negative read header timeout", []string{"-http-read-header-timeout", "-1s"}, nil, "-http-read-header-timeout"},
		{"zero max header bytes", []string{"-http-max-header-bytes", "0"}, nil, "-http-max-header-bytes"},
	})
	// A negative ping interval is valid: it turns pings off.
	expectStarts(t, "-ping-interval", "-1s")
}
