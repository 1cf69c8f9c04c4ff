package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stompgate/stompgate/internal/testnginx"
)

// TestNginxConfigFollowsWSPath runs the deployment as an operator would:
// the server with WSSERVER_WS_PATH=/stomp, and in front of it a real nginx
// loading what `wsserver nginx-config` prints with the same environment,
// as a conf.d file. The handshake limit lands on /stomp: the first
// handshakeBurst handshakes carry STOMP, the next gets nginx's 429 and
// never reaches the server. /ws is no WebSocket endpoint any more, and
// the demo page and /healthz are the server's, through nginx.
func TestNginxConfigFollowsWSPath(t *testing.T) {
	env := map[string]string{
		"WSSERVER_WS_PATH": "/stomp",
		"WSSERVER_POLICY":  testPolicyFile(t),
	}
	base, _ := startAppEnv(t, env)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	args := []string{"nginx-config", "-nginx-listen", fmt.Sprintf("127.0.0.1:%d", testnginx.FreePort(t)), "-nginx-ws-upstreams", u.Host}
	if err := run(context.Background(), args, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("wsserver %s: %v", strings.Join(args, " "), err)
	}
	conf := out.String()
	for _, want := range []string{"location = /stomp {", "limit_req zone=ws_handshake burst=5 nodelay;"} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx-config output lacks %q", want)
		}
	}
	if strings.Contains(conf, "location = /ws ") {
		t.Errorf("nginx-config output still has a location for /ws")
	}
	// The access log into nginx's test directory instead of /var/log.
	ngx := testnginx.Start(t, []byte(strings.ReplaceAll(conf, "/var/log/nginx/", "")))

	resp := handshakeSequence(t, "ws"+strings.TrimPrefix(ngx.URL, "http")+"/stomp")
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("nginx's 429: got Retry-After %q, want \"2\" (one request per 2 s at 30r/m)", got)
	}
	if got := resp.Header.Get("RateLimit-Policy"); got != "" {
		t.Errorf("nginx's 429: got RateLimit-Policy %q, want none: the server must not have answered", got)
	}
	m := scrape(t, base)
	if got := m[`stompgate_handshakes_total{result="accepted"}`]; got != handshakeBurst {
		t.Errorf("handshakes accepted by the server: got %v, want %d", got, handshakeBurst)
	}
	if got := m[`stompgate_handshakes_total{result="rejected_limit"}`]; got != 0 {
		t.Errorf("handshakes refused by the server: got %v, want 0 (nginx refuses first)", got)
	}

	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/", "/stomp", http.StatusOK}, // the demo page connects to the served path
		{"/ws", "", http.StatusNotFound},
		{"/metrics", "", http.StatusNotFound},
	} {
		resp, err := http.Get(ngx.URL + c.path)
		if err != nil {
			t.Fatalf("GET %s through nginx: %v", c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.body) {
			t.Errorf("GET %s through nginx = %d, body containing %q? got %.80q; want %d", c.path, resp.StatusCode, c.body, body, c.status)
		}
	}
	if _, resp, err := dialWS(t, "ws"+strings.TrimPrefix(ngx.URL, "http")+"/ws"); err == nil {
		t.Errorf("WebSocket handshake on /ws through nginx succeeded, want a refusal: the server serves /stomp")
	} else if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("WebSocket handshake on /ws through nginx: %v (%s), want 404", err, describe(resp))
	}
}
