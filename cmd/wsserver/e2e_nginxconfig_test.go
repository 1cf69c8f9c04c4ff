package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
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

// TestNginxConfigHelp: nginx-config -h lists every one of its flags
// once, under a section heading, with its environment variable and
// default, as the server's -h does.
func TestNginxConfigHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"nginx-config", "-h"}, func(string) string { return "" }, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("nginx-config -h: got error %v, want flag.ErrHelp", err)
	}
	usage := out.String()
	if !strings.HasPrefix(usage, nginxUsageHead) {
		t.Errorf("nginx-config -h starts %q, want the usage head", usage[:min(len(usage), 80)])
	}
	in := map[string]int{}
	for _, sec := range nginxFlagSections {
		if !strings.Contains(usage, "\n"+sec.title+"\n") {
			t.Errorf("nginx-config -h lacks the heading %q", sec.title)
		}
		for _, n := range sec.flags {
			in[n]++
		}
	}
	var n nginxSettings
	n.flagSet(io.Discard).VisitAll(func(f *flag.Flag) {
		if in[f.Name] != 1 {
			t.Errorf("-%s is in %d sections of nginx-config -h, want 1", f.Name, in[f.Name])
		}
		line := fmt.Sprintf("  -%s (%s)\n", f.Name, envName(f.Name))
		if strings.Count(usage, line) != 1 {
			t.Errorf("nginx-config -h shows %q %d times, want once", line, strings.Count(usage, line))
		}
		delete(in, f.Name)
	})
	for name := range in {
		t.Errorf("nginx-config -h section lists -%s, which is no flag", name)
	}
}

// TestNginxConfigFullPaths: the standalone nginx.conf takes its user, pid
// file, logs and temporary directory from settings, from flags or the
// environment, instead of Debian's paths.
func TestNginxConfigFullPaths(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"WSSERVER_NGINX_USER": "nginx", "WSSERVER_NGINX_ERROR_LOG": "stderr"}
	args := []string{"nginx-config", "-nginx-full", "-nginx-pid", "/run/nginx/nginx.pid", "-nginx-access-log", "off", "-nginx-temp-path", "/var/cache/nginx", "-nginx-worker-connections", "1024"}
	if err := run(context.Background(), args, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("nginx-config: %v", err)
	}
	conf := out.String()
	for _, want := range []string{"user nginx;", "pid /run/nginx/nginx.pid;", "error_log stderr warn;", "access_log off", "/var/cache/nginx/", "worker_connections 1024;"} {
		if !strings.Contains(conf, want) {
			t.Errorf("rendered nginx.conf lacks %q", want)
		}
	}
	if strings.Contains(conf, "www-data") || strings.Contains(conf, "/var/log/nginx") {
		t.Errorf("rendered nginx.conf keeps a Debian default it was told to replace:\n%s", conf)
	}
}
