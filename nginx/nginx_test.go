package nginx

// Tests against a real nginx, started by internal/testnginx on a loopback
// port, in front of httptest upstreams that record what reaches them.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/policy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig places every file nginx writes inside testnginx's directory
// (relative paths resolve against nginx's prefix) and listens on port.
func testConfig(port int, ws, api []string) Config {
	return Config{
		Listen:       "127.0.0.1:" + strconv.Itoa(port),
		WSUpstreams:  ws,
		APIUpstreams: api,
		PIDFile:      "nginx.pid",
		ErrorLog:     "error.log",
		AccessLog:    "access.log",
		TempPath:     ".",
	}
}

// TestNginxAcceptsRendered runs `nginx -t` on rendered configurations:
// the default policy as Render produces it for a test directory, and with
// settings and policy shapes the default does not use, each as a conf.d
// file (included from a Debian-like nginx.conf) and as a full nginx.conf.
func TestNginxAcceptsRendered(t *testing.T) {
	t.Parallel()
	custom := policy.Policy{Zones: []policy.Zone{
		{Name: "no_burst", Rate: 50, Size: "32k", Routes: []policy.Route{{Path: "/a/{x}/b/{y}/", Upstream: "api"}}},
		{Name: "sockets", Rate: 20000, Burst: 100, Routes: []policy.Route{{Method: "GET", Path: "/v1.2/socket", Upstream: "ws"}, {Method: "GET", Path: "/stomp", Upstream: "ws"}}},
		{Name: "deletes", Rate: 1000, Burst: 1, Routes: []policy.Route{{Method: "DELETE", Path: "/rooms/{id}", Upstream: "api"}, {Method: "DELETE", Path: "/a/{x}/b/{y}/", Upstream: "api"}}},
	}}
	certFile, keyFile := testCertificate(t)
	tests := []struct {
		name   string
		policy policy.Policy
		edit   func(*Config)
	}{
		{name: "default", policy: policy.Default(), edit: func(*Config) {}},
		{name: "default without API", policy: policy.Default(), edit: func(c *Config) { c.APIUpstreams = nil }},
		{name: "custom policy", policy: custom, edit: func(*Config) {}},
		{name: "custom config", policy: policy.Default(), edit: func(c *Config) {
			c.ServerName = "game.example.com www.game.example.com"
			c.WSUpstreams = []string{"127.0.0.1:1", "localhost:2", "[::1]:3"}
			c.APIUpstreams = []string{"127.0.0.1:4", "127.0.0.1:5"}
			c.WSPath = "/stomp/v1"
			c.ReadTimeout = 90500 * time.Millisecond
			c.WorkerConnections = 100
			c.ErrorLog = "stderr"
			c.AccessLog = "off"
		}},
		{name: "tls", policy: policy.Default(), edit: func(c *Config) {
			c.TLSCert, c.TLSKey = certFile, keyFile
			c.TLSListen = "127.0.0.1:" + strconv.Itoa(testnginx.FreePort(t))
		}},
	}
	for _, tt := range tests {
		for _, full := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/full=%v", tt.name, full), func(t *testing.T) {
				t.Parallel()
				cfg := testConfig(testnginx.FreePort(t), nil, []string{"127.0.0.1:9"})
				cfg.Full = full
				tt.edit(&cfg)
				conf, err := Render(tt.policy, cfg)
				if err != nil {
					t.Fatalf("Render = %v", err)
				}
				if err := testnginx.Check(t, conf); err != nil {
					t.Errorf("%v\n%s", err, conf)
				}
			})
		}
	}
}

// TestNginxAcceptsShipped runs `nginx -t` on the shipped configurations
// with only their ports and paths moved into a test directory: the conf.d
// file included from a Debian-like nginx.conf, and the full nginx.conf.
func TestNginxAcceptsShipped(t *testing.T) {
	t.Parallel()
	for _, g := range goldens {
		t.Run(g.file, func(t *testing.T) {
			t.Parallel()
			shipped, err := os.ReadFile(g.file)
			if err != nil {
				t.Fatal(err)
			}
			moved := strings.NewReplacer(
				"listen 80;", "listen 127.0.0.1:"+strconv.Itoa(testnginx.FreePort(t))+";",
				"pid /run/nginx.pid;", "pid nginx.pid;",
				"/var/log/nginx/", "",
				"http {\n", "http {\n"+
					"    client_body_temp_path client_body_temp;\n"+
					"    proxy_temp_path proxy_temp;\n"+
					"    fastcgi_temp_path fastcgi_temp;\n"+
					"    uwsgi_temp_path uwsgi_temp;\n"+
					"    scgi_temp_path scgi_temp;\n",
			).Replace(string(shipped))
			if strings.Contains(moved, "/var/") || strings.Contains(moved, "/run/") {
				t.Fatalf("the shipped configuration still names a system path after moving:\n%s", moved)
			}
			if err := testnginx.Check(t, []byte(moved)); err != nil {
				t.Errorf("nginx -t on %s: %v", g.file, err)
			}
		})
	}
}

// TestNginxDefaultLimits sends bursts through nginx with the default policy
// and checks what passes, what is refused and what reaches the upstreams.
func TestNginxDefaultLimits(t *testing.T) {
	t.Parallel()
	ws, api := newRecorder(t), newRecorder(t)
	p := policy.Default()
	conf, err := Render(p, testConfig(testnginx.FreePort(t), []string{ws.addr()}, []string{api.addr()}))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, conf)
	// The upstream sees the Host the client sent, port included: the
	// server compares it with a browser's Origin, which has the port.
	host := srv.Addr
	zone := func(name string) policy.Zone {
		z, ok := p.Zone(name)
		if !ok {
			t.Fatalf("default policy has no zone %q", name)
		}
		return z
	}

	t.Run("ws handshake", func(t *testing.T) {
		t.Parallel()
		upgrade := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}
		c, got := rapid(t, srv.URL, zone(policy.ZoneHandshake), "GET", "/ws", upgrade, 7)
		wantPass(t, got[:6], "GET /ws")
		want429(t, got[6], "GET /ws #7", 1)

		reached := ws.from(c.ip)
		if len(reached) != 6 {
			t.Fatalf("ws upstream got %d requests from %s, want 6", len(reached), c.ip)
		}
		for i, r := range reached {
			for _, h := range []struct{ name, got, want string }{
				{"method", r.method, "GET"},
				{"path", r.path, "/ws"},
				{"Upgrade", r.header.Get("Upgrade"), "websocket"},
				{"Connection", strings.ToLower(r.header.Get("Connection")), "upgrade"},
				{"Host", r.host, host},
				{"X-Real-IP", r.header.Get("X-Real-IP"), c.ip},
				{"X-Forwarded-For", r.header.Get("X-Forwarded-For"), c.ip},
			} {
				if h.got != h.want {
					t.Errorf("request %d at the ws upstream: %s = %q, want %q", i+1, h.name, h.got, h.want)
				}
			}
		}
		if n := len(api.from(c.ip)); n != 0 {
			t.Errorf("api upstream got %d requests for /ws, want 0", n)
		}
	})

	t.Run("room create", func(t *testing.T) {
		t.Parallel()
		c, got := rapid(t, srv.URL, zone(policy.ZoneRoomCreate), "POST", "/rooms", nil, 6)
		wantPass(t, got[:5], "POST /rooms")
		want429(t, got[5], "POST /rooms #6", 1)
		if n := len(api.from(c.ip)); n != 5 {
			t.Errorf("api upstream got %d POST /rooms from %s, want 5", n, c.ip)
		}
		// Other methods and other zones are not held back by the full
		// room_create bucket.
		wantPass(t, c.send(t, "GET", "/rooms", nil, 20), "GET /rooms after the POST limit")
		wantPass(t, c.send(t, "POST", "/rooms/abc/join", nil, 1), "POST /rooms/abc/join after the POST /rooms limit")
		if n := len(api.from(c.ip)); n != 5+20+1 {
			t.Errorf("api upstream got %d requests from %s, want %d", n, c.ip, 5+20+1)
		}
	})

	t.Run("room list not limited", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, srv.URL)
		wantPass(t, c.send(t, "GET", "/rooms", nil, 30), "GET /rooms")
	})

	t.Run("room join", func(t *testing.T) {
		t.Parallel()
		c, got := rapid(t, srv.URL, zone(policy.ZoneRoomJoin), "POST", "/rooms/abc/join", nil, 12)
		wantPass(t, got[:11], "POST /rooms/abc/join")
		want429(t, got[11], "POST /rooms/abc/join #12", 1)
		// Another room shares the bucket: the key is the client, not the
		// path.
		want429(t, c.send(t, "POST", "/rooms/xyz/join", nil, 1)[0], "POST /rooms/xyz/join", 1)
		// GET on the same path is not limited; a path the pattern does not
		// match goes to the catch-all location.
		wantPass(t, c.send(t, "GET", "/rooms/abc/join", nil, 15), "GET /rooms/abc/join")
		wantPass(t, c.send(t, "POST", "/rooms/a/b/join", nil, 15), "POST /rooms/a/b/join")
		for _, r := range api.from(c.ip) {
			if r.method == "POST" && (r.path == "/rooms/xyz/join") {
				t.Errorf("a refused POST %s reached the api upstream", r.path)
			}
		}
	})
}

// TestNginxRetryAfterPerZone checks that Retry-After follows each zone's
// rate.
func TestNginxRetryAfterPerZone(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	p := policy.Policy{Zones: []policy.Zone{
		{Name: "slow", Rate: 500, Routes: []policy.Route{{Method: "POST", Path: "/slow", Upstream: "api"}}},
		{Name: "fast", Rate: 10000, Routes: []policy.Route{{Path: "/fast/{id}", Upstream: "api"}}},
	}}
	conf, err := Render(p, testConfig(testnginx.FreePort(t), nil, []string{api.addr()}))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, conf)

	_, got := rapid(t, srv.URL, p.Zones[0], "POST", "/slow", nil, 2)
	wantPass(t, got[:1], "POST /slow")
	want429(t, got[1], "POST /slow #2", 2)

	_, got = rapid(t, srv.URL, p.Zones[1], "DELETE", "/fast/1", nil, 2)
	wantPass(t, got[:1], "DELETE /fast/1")
	want429(t, got[1], "DELETE /fast/1 #2", 1)
}

// TestNginxWebSocket opens a real WebSocket through nginx and exchanges a
// message, with a STOMP subprotocol negotiated end to end.
func TestNginxWebSocket(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if err := conn.Write(ctx, typ, append([]byte("echo: "), msg...)); err != nil {
			return
		}
		_, _, _ = conn.Read(ctx) // until the client closes
	}))
	t.Cleanup(upstream.Close)

	conf, err := Render(policy.Default(), testConfig(testnginx.FreePort(t), []string{upstream.Listener.Addr().String()}, nil))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, conf)

	c := newClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws://"+srv.Addr+"/ws", &websocket.DialOptions{
		HTTPClient:   c.http,
		Subprotocols: []string{"v12.stomp"},
	})
	if err != nil {
		t.Fatalf("Dial through nginx = %v", err)
	}
	defer conn.CloseNow()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Errorf("handshake status = %d, want 101", resp.StatusCode)
	}
	if got := conn.Subprotocol(); got != "v12.stomp" {
		t.Errorf("Subprotocol() = %q, want %q", got, "v12.stomp")
	}
	if got := resp.Header.Get("Retry-After"); got != "" {
		t.Errorf("handshake response Retry-After = %q, want none", got)
	}
	frame := "CONNECT\naccept-version:1.2\nhost:stompgate\n\n\x00"
	if err := conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("Write = %v", err)
	}
	typ, got, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("Read = %v", err)
	}
	if typ != websocket.MessageText || string(got) != "echo: "+frame {
		t.Errorf("Read = %v %q, want text %q", typ, got, "echo: "+frame)
	}
	if err := conn.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// answer is what a client saw for one request.
type answer struct {
	status      int
	retryAfter  []string
	contentType string
	body        string
}

// wantPass checks that every answer came from the upstream, with no
// Retry-After.
func wantPass(t *testing.T, answers []answer, what string) {
	t.Helper()
	for i, a := range answers {
		if a.status != http.StatusOK || a.body != "upstream" {
			t.Errorf("%s #%d: status %d body %q, want 200 from the upstream", what, i+1, a.status, a.body)
		}
		if len(a.retryAfter) != 0 {
			t.Errorf("%s #%d: Retry-After %q on a %d answer, want none", what, i+1, a.retryAfter, a.status)
		}
	}
}

// want429 checks a refusal: 429, one Retry-After of seconds and the JSON
// body.
func want429(t *testing.T, a answer, what string, seconds int) {
	t.Helper()
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("%s: status %d, want 429", what, a.status)
	}
	if want := []string{strconv.Itoa(seconds)}; fmt.Sprint(a.retryAfter) != fmt.Sprint(want) {
		t.Errorf("%s: Retry-After %q, want %q", what, a.retryAfter, want)
	}
	if a.contentType != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, a.contentType)
	}
	var body struct {
		Error      string `json:"error"`
		RetryAfter int    `json:"retry_after"`
	}
	if err := json.Unmarshal([]byte(a.body), &body); err != nil {
		t.Fatalf("%s: body %q is not JSON: %v", what, a.body, err)
	}
	if body.Error != "too_many_requests" || body.RetryAfter != seconds {
		t.Errorf("%s: body %q, want error too_many_requests and retry_after %d", what, a.body, seconds)
	}
}

// rapidAttempts bounds how often rapid retries a burst that took too long.
const rapidAttempts = 5

// rapid sends n requests back to back from a fresh client address and
// returns the client and the answers. nginx refuses the request after the
// burst only if the bucket has not drained by one request's worth in the
// meantime, that is if the n requests took less than z.Rate.Interval. On a
// loaded machine they may not: then the burst proves nothing, and rapid
// tries again from another address (a fresh bucket), failing the test after
// rapidAttempts.
func rapid(t *testing.T, baseURL string, z policy.Zone, method, path string, header http.Header, n int) (*client, []answer) {
	t.Helper()
	budget := z.Rate.Interval() * 9 / 10
	for attempt := 1; ; attempt++ {
		c := newClient(t, baseURL)
		start := time.Now()
		answers := c.send(t, method, path, header, n)
		elapsed := time.Since(start)
		if elapsed < budget {
			return c, answers
		}
		if attempt == rapidAttempts {
			t.Fatalf("%d requests to %s took longer than %v in %d attempts (last %v): the machine is too loaded to test a %s limit",
				n, path, budget, attempt, elapsed, z.Rate)
		}
		t.Logf("%d requests to %s took %v, above %v; again from a fresh address", n, path, elapsed, budget)
	}
}

// lastIP numbers the client addresses 127.0.0.2, 127.0.0.3, ...: each
// client gets its own bucket in every zone. Linux routes all of 127/8 to
// the loopback interface.
var lastIP atomic.Uint32

func init() { lastIP.Store(1) }

// client sends requests from its own loopback address.
type client struct {
	ip   string
	base string
	http *http.Client
}

// newClient returns a client of the server at baseURL, bound to an unused
// loopback address.
func newClient(t *testing.T, baseURL string) *client {
	t.Helper()
	n := lastIP.Add(1)
	ip := net.IPv4(127, byte(n>>16), byte(n>>8), byte(n))
	tr := &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 5 * time.Second}).DialContext,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{ip: ip.String(), base: baseURL, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// send sends n identical requests one after the other.
func (c *client) send(t *testing.T, method, path string, header http.Header, n int) []answer {
	t.Helper()
	answers := make([]answer, 0, n)
	for range n {
		req, err := http.NewRequest(method, c.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: reading the body: %v", method, path, err)
		}
		answers = append(answers, answer{
			status:      resp.StatusCode,
			retryAfter:  resp.Header.Values("Retry-After"),
			contentType: resp.Header.Get("Content-Type"),
			body:        string(body),
		})
	}
	return answers
}

// recorder is an upstream that answers 200 "upstream" and remembers every
// request.
type recorder struct {
	srv *httptest.Server

	mu sync.Mutex
	// seen holds the requests in arrival order. Guarded by mu.
	seen []seenRequest
}

// seenRequest is one request as the upstream received it.
type seenRequest struct {
	method, path, host string
	header             http.Header
}

// newRecorder starts a recorder, closed when the test ends.
func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, seenRequest{method: req.Method, path: req.URL.Path, host: req.Host, header: req.Header.Clone()})
		r.mu.Unlock()
		_, _ = io.WriteString(w, "upstream")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// addr returns the recorder's host:port.
func (r *recorder) addr() string {
	return r.srv.Listener.Addr().String()
}

// from returns the requests whose X-Real-IP is ip.
func (r *recorder) from(ip string) []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []seenRequest
	for _, s := range r.seen {
		if s.header.Get("X-Real-IP") == ip {
			out = append(out, s)
		}
	}
	return out
}

// TestNginxSessionCap holds WebSockets open through nginx from one client
// address: with max_connections 3, three are proxied, the fourth gets 429
// with Retry-After policy.CapRetryAfter and the JSON body, another address
// is not affected, and once one socket closes its slot is free again.
func TestNginxSessionCap(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		_, _, _ = conn.Read(ctx) // hold the socket until the client closes
	}))
	t.Cleanup(upstream.Close)

	const capN = 3
	// A rate far above what the test sends, so that only the cap refuses.
	p := policy.Policy{Zones: []policy.Zone{{
		Name: "ws_handshake", Rate: 1000 * 1000, Burst: 100, MaxConnections: capN,
		Routes: []policy.Route{{Method: "GET", Path: "/ws", Upstream: "ws"}},
	}}}
	conf, err := Render(p, testConfig(testnginx.FreePort(t), []string{upstream.Listener.Addr().String()}, nil))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, conf)
	wsURL := "ws://" + srv.Addr + "/ws"
	capSeconds := int(policy.CapRetryAfter / time.Second)

	c := newClient(t, srv.URL)
	var open []*websocket.Conn
	for i := range capN {
		conn, a := dialThrough(t, c, wsURL)
		if conn == nil {
			t.Fatalf("socket %d of %d: status %d %q, want 101", i+1, capN, a.status, a.body)
		}
		open = append(open, conn)
	}
	conn, a := dialThrough(t, c, wsURL)
	if conn != nil {
		t.Fatalf("socket %d: accepted, want 429 at the cap of %d", capN+1, capN)
	}
	want429(t, a, fmt.Sprintf("socket %d", capN+1), capSeconds)

	// Another address has its own count.
	if conn, a := dialThrough(t, newClient(t, srv.URL), wsURL); conn == nil {
		t.Fatalf("another address: status %d %q, want 101", a.status, a.body)
	}

	// Closing one socket frees its slot once nginx has seen the close.
	if err := open[0].Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("Close = %v", err)
	}
	poll.Until(t, 10*time.Second, func() error {
		conn, a := dialThrough(t, c, wsURL)
		if conn == nil {
			return fmt.Errorf("after a close: status %d, want 101", a.status)
		}
		return nil
	})

	log := srv.ReadFile("access.log")
	if !strings.Contains(log, "limit_conn=REJECTED") {
		t.Errorf("access.log does not show the refusal as limit_conn=REJECTED:\n%s", log)
	}
}

// TestNginxAccessLogHidesQuery: a token in the query string, as a browser
// sends it on a WebSocket handshake, never reaches the access log.
func TestNginxAccessLogHidesQuery(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	conf, err := Render(policy.Default(), testConfig(testnginx.FreePort(t), []string{api.addr()}, []string{api.addr()}))
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	srv := testnginx.Start(t, conf)
	const secret = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.c2lnbmF0dXJl"
	c := newClient(t, srv.URL)
	for _, path := range []string{"/ws?access_token=" + secret, "/rooms?access_token=" + secret + "&x=1", "/other?access_token=" + secret} {
		c.send(t, "GET", path, nil, 1)
	}
	var log string
	poll.Until(t, 10*time.Second, func() error {
		log = srv.ReadFile("access.log")
		if n := strings.Count(log, "\n"); n < 3 {
			return fmt.Errorf("access.log has %d lines, want 3:\n%s", n, log)
		}
		return nil
	})
	for _, leak := range []string{secret, "access_token"} {
		if strings.Contains(log, leak) {
			t.Errorf("access.log contains %q:\n%s", leak, log)
		}
	}
	for _, want := range []string{`"GET /ws HTTP/1.1"`, `"GET /rooms HTTP/1.1"`, `"GET /other HTTP/1.1"`} {
		if !strings.Contains(log, want) {
			t.Errorf("access.log lacks %s:\n%s", want, log)
		}
	}
}

// dialThrough opens a WebSocket to url from c's address. It returns the
// connection, closed when the test ends, or nil and the refusal.
func dialThrough(t *testing.T, c *client, url string) (*websocket.Conn, answer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: c.http, Subprotocols: []string{"v12.stomp"}})
	if err == nil {
		t.Cleanup(func() { _ = conn.CloseNow() })
		return conn, answer{status: resp.StatusCode}
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
	}
	return nil, answer{
		status:      resp.StatusCode,
		retryAfter:  resp.Header.Values("Retry-After"),
		contentType: resp.Header.Get("Content-Type"),
		body:        string(body),
	}
}
