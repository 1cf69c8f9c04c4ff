package testnginx

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// minimal returns a configuration that answers every request with body on
// 127.0.0.1:port, keeping every file inside the prefix directory.
func minimal(port int, body string) string {
	return `
pid nginx.pid;
error_log error.log;
events { worker_connections 64; }
http {
    access_log access.log;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    server {
        listen 127.0.0.1:` + strconv.Itoa(port) + `;
        location / { return 200 "` + body + `"; }
    }
}
`
}

func TestCheck(t *testing.T) {
	t.Parallel()
	port := FreePort(t)
	if err := Check(t, []byte(minimal(port, "ok"))); err != nil {
		t.Fatalf("Check(valid configuration) = %v, want nil", err)
	}
	err := Check(t, []byte("events {}\nhttp { server { listen 127.0.0.1:1; bogus_directive on; } }\n"))
	if err == nil || !strings.Contains(err.Error(), "bogus_directive") {
		t.Fatalf("Check(invalid configuration) = %v, want an error naming bogus_directive", err)
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	s := Start(t, []byte(minimal(FreePort(t), "hello from nginx")))
	resp, err := http.Get(s.URL + "/")
	if err != nil {
		t.Fatalf("GET / = %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello from nginx" {
		t.Fatalf("GET / = %d %q, want 200 %q", resp.StatusCode, body, "hello from nginx")
	}
	s.Stop()
	s.Stop() // idempotent
	if _, err := http.Get(s.URL + "/"); err == nil {
		t.Fatalf("GET / after Stop succeeded, want a connection error")
	}
	if got := s.ReadFile("access.log"); !strings.Contains(got, `"GET / HTTP/1.1" 200`) {
		t.Errorf("access.log = %q, want the GET / request", got)
	}
}

// An http-context file is included from a Debian-like nginx.conf: it is
// served, and a directive that nginx.conf already sets at http level is a
// duplicate, as on a real install.
func TestStartInclude(t *testing.T) {
	t.Parallel()
	port := FreePort(t)
	include := "server {\n    listen 127.0.0.1:" + strconv.Itoa(port) + ";\n    location / { return 200 \"included\"; }\n}\n"
	s := Start(t, []byte(include))
	resp, err := http.Get(s.URL + "/")
	if err != nil {
		t.Fatalf("GET / = %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "included" {
		t.Errorf("GET / = %d %q, want 200 \"included\"", resp.StatusCode, body)
	}
	if got := s.ReadFile("conf.d/stompgate.conf"); got != include {
		t.Errorf("conf.d/stompgate.conf = %q, want the included file", got)
	}
	err = Check(t, []byte("default_type text/plain;\n"+include))
	if err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("Check(include repeating default_type) = %v, want a duplicate directive error", err)
	}
}

func TestListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		conf, want string
	}{
		{"  listen 8080;", "127.0.0.1:8080"},
		{"listen 127.0.0.2:81 default_server;", "127.0.0.2:81"},
		{"listen *:82;", "127.0.0.1:82"},
		{"listen [::1]:83;", "[::1]:83"},
		{"# listen 1;\n    listen 84;\nlisten 85;", "127.0.0.1:84"},
	}
	for _, tt := range tests {
		got, err := listenAddr([]byte(tt.conf))
		if err != nil || got != tt.want {
			t.Errorf("listenAddr(%q) = %q, %v, want %q, nil", tt.conf, got, err, tt.want)
		}
	}
	if _, err := listenAddr([]byte("server {}")); err == nil {
		t.Errorf("listenAddr(no listen) = nil error, want an error")
	}
}
