package nginx

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/policy"
)

var update = flag.Bool("update", false, "rewrite the golden files from Render(policy.Default(), their Config)")

// goldens are the shipped configurations, each Render(policy.Default(),
// cfg): the file for /etc/nginx/conf.d/ and the standalone nginx.conf.
var goldens = []struct {
	file string
	cfg  Config
}{
	{file: "stompgate.conf", cfg: Config{}},
	{file: "stompgate-full.conf", cfg: Config{Full: true}},
}

func TestRenderGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.file, func(t *testing.T) {
			got, err := Render(policy.Default(), g.cfg)
			if err != nil {
				t.Fatalf("Render(default) = %v", err)
			}
			if *update {
				if err := os.WriteFile(g.file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(g.file)
			if err != nil {
				t.Fatalf("%v (run go test -run TestRenderGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Render(default) differs from %s at line %d; run go test ./nginx -run TestRenderGolden -update and review the diff",
					g.file, firstDiffLine(got, want))
			}
		})
	}
}

// firstDiffLine returns the 1-based number of the first line where a and b
// differ.
func firstDiffLine(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// TestRenderDefault states the directives the default policy must produce,
// so a regression reads as a named directive rather than a golden diff.
// The default is a conf.d file for the wsserver alone: no API.
func TestRenderDefault(t *testing.T) {
	t.Parallel()
	out, err := Render(policy.Default(), Config{})
	if err != nil {
		t.Fatalf("Render(default) = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"\n    access_log /var/log/nginx/access.log stompgate;\n",
		"\nlimit_req_zone $stompgate_key_get zone=ws_handshake:10m rate=3r/s;\n",
		"\nmap $request_method $stompgate_key_get {\n    GET        $stompgate_client_key;\n    default    \"\";\n}\n",
		"\n    limit_req_status 429;\n",
		"\n    limit_req_log_level warn;\n",
		"\nmap $limit_req_status $stompgate_retry_after_1s {\n    REJECTED    1;\n    default     \"\";\n}\n",
		"\nmap $http_upgrade $stompgate_connection_upgrade {\n    default    upgrade;\n    ''         close;\n}\n",
		"\nupstream stompgate_ws {\n    least_conn;\n    server 127.0.0.1:8080;\n    keepalive 16;\n}\n",
		"\nserver {\n    listen 80;\n    server_name _;\n    server_tokens off;\n",
		"location = /ws {\n",
		"limit_req zone=ws_handshake burst=5 nodelay;\n",
		"error_page 429 @stompgate_429_1s;\n",
		"location = /metrics {\n        return 404;\n    }\n",
		"location / {\n        proxy_pass http://stompgate_ws;\n",
		"location @stompgate_429_1s {\n",
		"add_header Retry-After $stompgate_retry_after_1s always;\n",
		"add_header Retry-After $stompgate_conn_retry_after always;\n",
		`return 429 '{"error":"too_many_requests","retry_after":$stompgate_retry_after_1s$stompgate_conn_retry_after}\n';` + "\n",
		"\nlimit_conn_zone $stompgate_key_get zone=ws_handshake-conn:10m;\n",
		"\n    limit_conn_status 429;\n",
		"\n    limit_conn_log_level warn;\n",
		"\nmap $limit_conn_status $stompgate_conn_retry_after {\n    REJECTED    2;\n    default     \"\";\n}\n",
		"limit_conn ws_handshake-conn 100;\n",
		`'"$request_method $uri $server_protocol" '`,
		"proxy_read_timeout 75s;\n",
		"proxy_send_timeout 75s;\n",
		"proxy_buffering off;\n",
		"# Not rendered, for want of an API upstream (-nginx-api-upstreams):\n#   POST /rooms (room_create)\n#   POST /rooms/{id}/join (room_join)\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("Render(default) lacks %q", want)
		}
	}
	if got := strings.Count(conf, "proxy_pass http://stompgate_ws;"); got != 2 {
		t.Errorf("proxy_pass to stompgate_ws appears %d times, want 2 (the /ws location and /)", got)
	}
	if got := strings.Count(conf, "proxy_set_header Upgrade $http_upgrade;"); got != 1 {
		t.Errorf("Upgrade header set in %d locations, want 1 (the /ws location)", got)
	}
	// An included file sets nothing the distribution's nginx.conf sets at
	// http level or above, and has no API to send anything to.
	for _, unwanted := range []string{
		"_temp_path ", "daemon ", "ip_hash;", "\nuser ", "\npid ", "events", "\nhttp {", "error_log", "worker_",
		"\nserver_tokens", "\ndefault_type", "\nlimit_req_status", "\nlimit_conn_status",
		"stompgate_api", "zone=room_create", "location = /rooms", "ssl",
	} {
		if strings.Contains(conf, unwanted) {
			t.Errorf("Render(default) contains %q, want it absent", unwanted)
		}
	}
}

// TestRenderFull: -nginx-full wraps the same directives in a standalone
// nginx.conf with the main and events settings.
func TestRenderFull(t *testing.T) {
	t.Parallel()
	include, err := Render(policy.Default(), Config{})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	out, err := Render(policy.Default(), Config{Full: true})
	if err != nil {
		t.Fatalf("Render(Full) = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"\nuser www-data;\n",
		"\npid /run/nginx.pid;\n",
		"\nerror_log /var/log/nginx/error.log warn;\n",
		"\n    worker_connections 4096;\n",
		"\nworker_rlimit_nofile 8192;\n",
		"\nhttp {\n    default_type application/octet-stream;\n",
		"\n        access_log /var/log/nginx/access.log stompgate;\n",
		"\n    server {\n        listen 80;\n",
		"\n        location = /ws {\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("Render(Full) lacks %q", want)
		}
	}
	// Every directive line of the included form is in the full one,
	// indented; only the comment on where to save the file differs.
	for _, line := range strings.Split(string(include), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(conf, "    "+line+"\n") {
			t.Errorf("Render(Full) lacks the included line %q, indented", line)
		}
	}
	if !strings.HasSuffix(conf, "\n    }\n}\n") {
		t.Errorf("Render(Full) does not end by closing server and http:\n%s", conf[max(0, len(conf)-80):])
	}
}

// TestRenderWSPath: the policy's ws route follows WSPath, so the handshake
// limit lands on the path the wsserver serves, and no location is left on
// the policy's own path.
func TestRenderWSPath(t *testing.T) {
	t.Parallel()
	p := policy.Default()
	p.Zones = append(p.Zones, policy.Zone{
		Name: "sockets", Rate: 20000, Burst: 100,
		Routes: []policy.Route{{Method: "GET", Path: "/v1/socket", Upstream: "ws"}, {Method: "GET", Path: "/stomp", Upstream: "ws"}},
	})
	out, err := Render(p, Config{WSPath: "/stomp"})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	conf := string(out)
	want := "    # GET /ws on /stomp (ws_handshake), GET /v1/socket on /stomp (sockets), GET /stomp (sockets)\n" +
		"    location = /stomp {\n" +
		"        # nodelay: requests within the burst are served at once rather\n" +
		"        # than spaced out at the rate; past the burst they get 429.\n" +
		"        limit_req zone=ws_handshake burst=5 nodelay;\n" +
		"        limit_req zone=sockets burst=100 nodelay;\n" +
		"        limit_conn ws_handshake-conn 100;\n" +
		"        error_page 429 @stompgate_429_1s;\n"
	if !strings.Contains(conf, want) {
		t.Errorf("Render lacks\n%s\nin\n%s", want, conf)
	}
	for _, unwanted := range []string{"location = /ws ", "location = /v1/socket "} {
		if strings.Contains(conf, unwanted) {
			t.Errorf("Render contains %q: a limit on a path the wsserver does not serve", unwanted)
		}
	}
}

// TestRenderAPI: the API upstream and its zones appear only when the
// policy has api routes and an upstream is given.
func TestRenderAPI(t *testing.T) {
	t.Parallel()
	wsOnly := policy.Policy{Zones: []policy.Zone{{Name: "ws_handshake", Rate: 3000, Burst: 5,
		Routes: []policy.Route{{Method: "GET", Path: "/ws", Upstream: "ws"}}}}}
	tests := []struct {
		name    string
		policy  policy.Policy
		api     []string
		wantAPI bool
	}{
		{name: "api routes and upstream", policy: policy.Default(), api: []string{"127.0.0.1:9000"}, wantAPI: true},
		{name: "api routes, no upstream", policy: policy.Default()},
		{name: "upstream, no api routes", policy: wsOnly, api: []string{"127.0.0.1:9000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Render(tt.policy, Config{APIUpstreams: tt.api})
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			conf := string(out)
			for _, s := range []string{
				"\nupstream stompgate_api {\n    server 127.0.0.1:9000;\n    keepalive 16;\n}\n",
				"\nlimit_req_zone $stompgate_key_post zone=room_create:10m rate=2r/s;\n",
				"\nlimit_req_zone $stompgate_key_post zone=room_join:10m rate=5r/s;\n",
				"\nmap $request_method $stompgate_key_post {\n",
				"    location = /rooms {\n",
				"    location ~ \"^/rooms/[^/]+/join$\" {\n",
				"proxy_pass http://stompgate_api;",
			} {
				if got := strings.Contains(conf, s); got != tt.wantAPI {
					t.Errorf("Render contains %q: %v, want %v", s, got, tt.wantAPI)
				}
			}
			if !strings.Contains(conf, "location / {\n        proxy_pass http://stompgate_ws;\n") {
				t.Errorf("Render does not send / to the wsserver")
			}
		})
	}
}

// TestRenderTLS: an HTTPS server with the certificate, and a plain HTTP
// server that only redirects to it, with the port when it is not 443.
func TestRenderTLS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tlsListen string
		redirect  string
	}{
		{name: "default port", redirect: "return 308 https://$host$request_uri;\n"},
		{name: "other port", tlsListen: "127.0.0.1:8443", redirect: "return 308 https://$host:8443$request_uri;\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := Render(policy.Default(), Config{TLSCert: "/etc/ssl/game.pem", TLSKey: "/etc/ssl/private/game.key", TLSListen: tt.tlsListen})
			if err != nil {
				t.Fatalf("Render = %v", err)
			}
			conf := string(out)
			listen := tt.tlsListen
			if listen == "" {
				listen = "443"
			}
			for _, want := range []string{
				"\nserver {\n    listen 80;\n    server_name _;\n    server_tokens off;\n",
				"    access_log /var/log/nginx/access.log stompgate;\n    location / {\n        " + tt.redirect + "    }\n}\n",
				"\nserver {\n    listen " + listen + " ssl;\n    ssl_certificate /etc/ssl/game.pem;\n    ssl_certificate_key /etc/ssl/private/game.key;\n",
				"    ssl_protocols TLSv1.2 TLSv1.3;\n",
			} {
				if !strings.Contains(conf, want) {
					t.Errorf("Render lacks %q", want)
				}
			}
			if got := strings.Count(conf, "access_log /var/log/nginx/access.log stompgate;"); got != 2 {
				t.Errorf("access_log with the stompgate format appears %d times, want 2 (the redirect and the HTTPS server)", got)
			}
			if got := strings.Count(conf, "limit_req zone="); got != 1 {
				t.Errorf("limit_req appears %d times, want 1 (on the HTTPS server's /ws)", got)
			}
		})
	}
}

func TestRenderConfig(t *testing.T) {
	t.Parallel()
	p := policy.Default()
	cfg := Config{
		Full:              true,
		Listen:            "127.0.0.1:18081",
		ServerName:        "game.example.com www.game.example.com",
		WSUpstreams:       []string{"10.0.0.1:8080", "10.0.0.2:8080"},
		APIUpstreams:      []string{"api.internal:9000"},
		WSPath:            "/stomp",
		ReadTimeout:       90500 * time.Millisecond,
		HeartBeat:         30 * time.Second,
		WorkerConnections: 1000,
		User:              "nobody",
		PIDFile:           "nginx.pid",
		ErrorLog:          "stderr",
		AccessLog:         "off",
		TempPath:          "/tmp/x",
	}
	out, err := Render(p, cfg)
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"listen 127.0.0.1:18081;\n",
		"server_name game.example.com www.game.example.com;\n",
		"        server 10.0.0.1:8080;\n        server 10.0.0.2:8080;\n",
		"        server api.internal:9000;\n",
		"        # GET /ws on /stomp (ws_handshake)\n        location = /stomp {\n",
		"proxy_read_timeout 90500ms;\n",
		"every\n            # 30s, keep",
		"worker_connections 1000;\n",
		"worker_rlimit_nofile 2000;\n",
		"user nobody;\n",
		"pid nginx.pid;\n",
		"error_log stderr warn;\n",
		"access_log off;\n",
		"client_body_temp_path /tmp/x/client_body_temp;\n",
		"proxy_temp_path /tmp/x/proxy_temp;\n",
		"fastcgi_temp_path /tmp/x/fastcgi_temp;\n",
		"uwsgi_temp_path /tmp/x/uwsgi_temp;\n",
		"scgi_temp_path /tmp/x/scgi_temp;\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("Render lacks %q", want)
		}
	}
	if got := strings.Count(conf, "proxy_set_header Upgrade $http_upgrade;"); got != 1 {
		t.Errorf("WebSocket locations: %d, want 1 (/stomp)", got)
	}
	if strings.Contains(conf, "location = /ws ") {
		t.Errorf("Render has a location for /ws, which the wsserver does not serve with WSPath /stomp")
	}
	if cfg.WSUpstreams[0] != "10.0.0.1:8080" || cfg.ReadTimeout != 90500*time.Millisecond {
		t.Errorf("Render modified the caller's Config: %+v", cfg)
	}
}

// TestRenderRetryAfter checks that zones with different rates get their
// own Retry-After, and that a location limited by two zones announces the
// longer wait.
func TestRenderRetryAfter(t *testing.T) {
	t.Parallel()
	p := policy.Policy{Zones: []policy.Zone{
		{Name: "slow", Rate: 500, Routes: []policy.Route{{Method: "POST", Path: "/slow", Upstream: "api"}, {Method: "POST", Path: "/both", Upstream: "api"}}},
		{Name: "fast", Rate: 10000, Burst: 2, Size: "1m", Routes: []policy.Route{{Path: "/fast", Upstream: "api"}, {Path: "/both", Upstream: "api"}}},
		{Name: "crawl", Rate: 50, Routes: []policy.Route{{Path: "/items/{id}", Upstream: "api"}}},
	}}
	out, err := Render(p, Config{APIUpstreams: []string{"127.0.0.1:9000"}})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"limit_req_zone $stompgate_key_post zone=slow:10m rate=30r/m;\n",
		"limit_req_zone $stompgate_client_key zone=fast:1m rate=10r/s;\n",
		"limit_req_zone $stompgate_client_key zone=crawl:10m rate=3r/m;\n",
		"map $limit_req_status $stompgate_retry_after_1s {",
		"map $limit_req_status $stompgate_retry_after_2s {",
		"map $limit_req_status $stompgate_retry_after_20s {",
		"location = /slow {\n        # nodelay: requests within the burst are served at once rather\n        # than spaced out at the rate; past the burst they get 429.\n        limit_req zone=slow nodelay;\n        error_page 429 @stompgate_429_2s;\n",
		"location = /fast {\n        # nodelay: requests within the burst are served at once rather\n        # than spaced out at the rate; past the burst they get 429.\n        limit_req zone=fast burst=2 nodelay;\n        error_page 429 @stompgate_429_1s;\n",
		"limit_req zone=slow nodelay;\n        limit_req zone=fast burst=2 nodelay;\n        error_page 429 @stompgate_429_2s;\n",
		`location ~ "^/items/[^/]+$" {`,
		`return 429 '{"error":"too_many_requests","retry_after":20}\n';`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("Render lacks %q", want)
		}
	}
	if strings.Contains(conf, "$stompgate_key_get") {
		t.Errorf("Render contains a GET key map, but no zone limits GET")
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		policy  policy.Policy
		cfg     Config
		wantErr string
		wantIs  error
	}{
		{name: "invalid policy", policy: policy.Policy{}, wantErr: "policy: no zones", wantIs: policy.ErrInvalid},
		{name: "listen port", cfg: Config{Listen: "70000"}, wantErr: `nginx: Listen "70000": want host:port`},
		{name: "listen host", cfg: Config{Listen: "a b:80"}, wantErr: `nginx: Listen "a b:80": host "a b" is not a host name or IP address`},
		{name: "listen syntax", cfg: Config{Listen: "80;"}, wantErr: `nginx: Listen "80;": want host:port`},
		{name: "listen host port", cfg: Config{Listen: "127.0.0.1:0"}, wantErr: `nginx: Listen "127.0.0.1:0": port "0" is not between 1 and 65535`},
		{name: "server name", cfg: Config{ServerName: "a;b"}, wantErr: `nginx: ServerName "a;b" is not a list of host names`},
		{name: "ws upstream", cfg: Config{WSUpstreams: []string{"10.0.0.1"}}, wantErr: `nginx: WSUpstreams "10.0.0.1": want host:port`},
		{name: "api upstream", cfg: Config{APIUpstreams: []string{"h:99999"}}, wantErr: `nginx: APIUpstreams "h:99999": port "99999" is not between 1 and 65535`},
		{name: "ws path", cfg: Config{WSPath: "ws"}, wantErr: `nginx: WSPath "ws" is not a path of letters, digits and -._~/`},
		{name: "ws path braces", cfg: Config{WSPath: "/{x}"}, wantErr: `nginx: WSPath "/{x}" is not a path of letters, digits and -._~/`},
		{name: "negative heart-beat", cfg: Config{HeartBeat: -time.Second}, wantErr: `nginx: HeartBeat -1s is negative`},
		{name: "negative read timeout", cfg: Config{ReadTimeout: -time.Second}, wantErr: `nginx: ReadTimeout -1s is negative`},
		{
			name:    "read timeout below heart-beat",
			cfg:     Config{ReadTimeout: 5 * time.Second},
			wantErr: `nginx: ReadTimeout 5s must exceed HeartBeat 10s, or idle sessions are cut between heart-beats`,
		},
		{
			name:    "read timeout equal to heart-beat",
			cfg:     Config{ReadTimeout: 30 * time.Second, HeartBeat: 30 * time.Second},
			wantErr: `nginx: ReadTimeout 30s must exceed HeartBeat 30s, or idle sessions are cut between heart-beats`,
		},
		{name: "sub-millisecond timeout", cfg: Config{ReadTimeout: 75*time.Second + 1}, wantErr: `nginx: ReadTimeout 1m15.000000001s is not a whole number of milliseconds`},
		{name: "worker connections", cfg: Config{WorkerConnections: -1}, wantErr: `nginx: WorkerConnections -1 is negative`},
		{name: "user", cfg: Config{User: "www data"}, wantErr: `nginx: User "www data" contains characters nginx would parse as syntax`},
		{name: "pid file", cfg: Config{PIDFile: "/run/$x.pid"}, wantErr: `nginx: PIDFile "/run/$x.pid" contains characters nginx would parse as syntax`},
		{name: "error log", cfg: Config{ErrorLog: "a{b"}, wantErr: `nginx: ErrorLog "a{b" contains characters nginx would parse as syntax`},
		{name: "access log", cfg: Config{AccessLog: "x;"}, wantErr: `nginx: AccessLog "x;" contains characters nginx would parse as syntax`},
		{name: "temp path", cfg: Config{TempPath: "/tmp/a b"}, wantErr: `nginx: TempPath "/tmp/a b" contains characters nginx would parse as syntax`},
		{name: "tls cert alone", cfg: Config{TLSCert: "/c.pem"}, wantErr: `nginx: TLSKey is empty but TLSCert "/c.pem" is set; set both or neither`},
		{name: "tls key alone", cfg: Config{TLSKey: "/k.pem"}, wantErr: `nginx: TLSCert is empty but TLSKey "/k.pem" is set; set both or neither`},
		{name: "tls cert syntax", cfg: Config{TLSCert: "/c;.pem", TLSKey: "/k.pem"}, wantErr: `nginx: TLSCert "/c;.pem" contains characters nginx would parse as syntax`},
		{name: "tls listen", cfg: Config{TLSCert: "/c.pem", TLSKey: "/k.pem", TLSListen: "x"}, wantErr: `nginx: TLSListen "x": want host:port`},
		{name: "tls listen same port", cfg: Config{TLSCert: "/c.pem", TLSKey: "/k.pem", TLSListen: "127.0.0.1:80"}, wantErr: `nginx: TLSListen "127.0.0.1:80" and Listen "80" use the same port`},
		{
			name: "WSPath routed to the API",
			policy: policy.Policy{Zones: []policy.Zone{
				{Name: "z", Rate: 1000, Routes: []policy.Route{{Method: "POST", Path: "/ws", Upstream: "api"}}},
			}},
			cfg:     Config{APIUpstreams: []string{"127.0.0.1:9000"}},
			wantErr: `nginx: WSPath "/ws" is also route "POST /ws" of zone "z", which goes to upstream api; the WebSocket endpoint needs upstream ws`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.policy
			if p.Zones == nil && tt.wantIs == nil {
				p = policy.Default()
			}
			want := tt.wantIs
			if want == nil {
				want = ErrInvalidConfig
			}
			out, err := Render(p, tt.cfg)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Render error = %v, want %s", err, tt.wantErr)
			}
			if !errors.Is(err, want) {
				t.Errorf("Render error does not match %v", want)
			}
			if out != nil {
				t.Errorf("Render output = %d bytes, want nil on error", len(out))
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rate policy.Rate
		want int
	}{
		{3000, 1},
		{1000, 1},
		{999, 2},
		{500, 2},
		{50, 20},
		{MaxRateForTest, 1},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.rate); got != tt.want {
			t.Errorf("retryAfterSeconds(%s) = %d, want %d", tt.rate, got, tt.want)
		}
	}
}

// MaxRateForTest is policy.MaxRate, named here to keep the table short.
const MaxRateForTest = policy.MaxRate

func TestLocationMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, want string
	}{
		{"/ws", "= /ws"},
		{"/", "= /"},
		{"/rooms/", "= /rooms/"},
		{"/rooms/{id}/join", `~ "^/rooms/[^/]+/join$"`},
		{"/v1.2/{a}/{b}/", `~ "^/v1\.2/[^/]+/[^/]+/$"`},
		{"/a-b~c/{x_1}", `~ "^/a-b~c/[^/]+$"`},
	}
	for _, tt := range tests {
		if got := locationMatch(tt.path); got != tt.want {
			t.Errorf("locationMatch(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}

var sinkBytes []byte

// BenchmarkRender measures Render of the default policy against its floor,
// executing the template on data laid out in advance
// (BenchmarkRenderTemplatePeer).
func BenchmarkRender(b *testing.B) {
	b.ReportAllocs()
	p := policy.Default()
	for b.Loop() {
		out, err := Render(p, Config{})
		if err != nil {
			b.Fatal(err)
		}
		sinkBytes = out
	}
}

// BenchmarkRenderTemplatePeer is the reference for BenchmarkRender.
func BenchmarkRenderTemplatePeer(b *testing.B) {
	b.ReportAllocs()
	cfg, err := Config{}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	data, err := newRenderData(policy.Default(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var buf bytes.Buffer
		if err := includeTmpl.Execute(&buf, data); err != nil {
			b.Fatal(err)
		}
		sinkBytes = buf.Bytes()
	}
}
