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

var update = flag.Bool("update", false, "rewrite stompgate.conf from Render(policy.Default(), defaultConfig)")

// defaultConfig renders the shipped stompgate.conf.
var defaultConfig = Config{}

// goldenFile is the shipped configuration, checked against Render.
const goldenFile = "stompgate.conf"

func TestRenderGolden(t *testing.T) {
	got, err := Render(policy.Default(), defaultConfig)
	if err != nil {
		t.Fatalf("Render(default) = %v", err)
	}
	if *update {
		if err := os.WriteFile(goldenFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("%v (run go test -run TestRenderGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Render(default) differs from %s at line %d; run go test ./nginx -run TestRenderGolden -update and review the diff",
			goldenFile, firstDiffLine(got, want))
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
func TestRenderDefault(t *testing.T) {
	t.Parallel()
	out, err := Render(policy.Default(), Config{})
	if err != nil {
		t.Fatalf("Render(default) = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"user www-data;\n",
		"pid /run/nginx.pid;\n",
		"error_log /var/log/nginx/error.log warn;\n",
		"worker_connections 4096;\n",
		"access_log /var/log/nginx/access.log stompgate;\n",
		"limit_req_zone $stompgate_key_get zone=ws_handshake:10m rate=3r/s;\n",
		"limit_req_zone $stompgate_key_post zone=room_create:10m rate=2r/s;\n",
		"limit_req_zone $stompgate_key_post zone=room_join:10m rate=5r/s;\n",
		"map $request_method $stompgate_key_post {\n        POST       $binary_remote_addr;\n        default    \"\";\n    }\n",
		"limit_req_status 429;\n",
		"limit_req_log_level warn;\n",
		"map $limit_req_status $stompgate_retry_after_1s {\n        REJECTED    1;\n        default     \"\";\n    }\n",
		"map $http_upgrade $connection_upgrade {\n        default    upgrade;\n        ''         close;\n    }\n",
		"upstream stompgate_ws {\n        least_conn;\n        server 127.0.0.1:8080;\n    }\n",
		"upstream stompgate_api {\n        server 127.0.0.1:9000;\n        keepalive 16;\n    }\n",
		"listen 80;\n",
		"server_name _;\n",
		"location = /ws {\n",
		"limit_req zone=ws_handshake burst=5 nodelay;\n",
		"location = /rooms {\n",
		"limit_req zone=room_create burst=4 nodelay;\n",
		`location ~ "^/rooms/[^/]+/join$" {` + "\n",
		"limit_req zone=room_join burst=10 nodelay;\n",
		"error_page 429 @stompgate_429_1s;\n",
		"location / {\n",
		"location @stompgate_429_1s {\n",
		"add_header Retry-After $stompgate_retry_after_1s always;\n",
		"add_header Retry-After $stompgate_conn_retry_after always;\n",
		`return 429 '{"error":"too_many_requests","retry_after":$stompgate_retry_after_1s$stompgate_conn_retry_after}\n';` + "\n",
		"limit_conn_zone $stompgate_key_get zone=ws_handshake-conn:10m;\n",
		"limit_conn_status 429;\n",
		"limit_conn_log_level warn;\n",
		"map $limit_conn_status $stompgate_conn_retry_after {\n        REJECTED    2;\n        default     \"\";\n    }\n",
		"limit_conn ws_handshake-conn 100;\n",
		`'"$request_method $uri $server_protocol" '`,
		"proxy_read_timeout 75s;\n",
		"proxy_send_timeout 75s;\n",
		"proxy_buffering off;\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("Render(default) lacks %q", want)
		}
	}
	if got := strings.Count(conf, "proxy_pass http://stompgate_ws;"); got != 1 {
		t.Errorf("proxy_pass to stompgate_ws appears %d times, want 1 (the /ws location)", got)
	}
	if got := strings.Count(conf, "proxy_set_header Upgrade $http_upgrade;"); got != 1 {
		t.Errorf("Upgrade header set in %d locations, want 1 (the /ws location)", got)
	}
	for _, unwanted := range []string{"_temp_path ", "daemon ", "ip_hash;"} {
		if strings.Contains(conf, unwanted) {
			t.Errorf("Render(default) contains %q, want it absent", unwanted)
		}
	}
}

func TestRenderConfig(t *testing.T) {
	t.Parallel()
	p := policy.Default()
	cfg := Config{
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
		"location = /stomp {\n",
		"location = /ws {\n", // the policy's ws route keeps its own location
		"# /stomp (not limited by the policy)\n",
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
	if got := strings.Count(conf, "proxy_pass http://stompgate_ws;"); got != 2 {
		t.Errorf("proxy_pass to stompgate_ws appears %d times, want 2 (/stomp and /ws)", got)
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
	out, err := Render(p, Config{})
	if err != nil {
		t.Fatalf("Render = %v", err)
	}
	conf := string(out)
	for _, want := range []string{
		"limit_req_zone $stompgate_key_post zone=slow:10m rate=30r/m;\n",
		"limit_req_zone $binary_remote_addr zone=fast:1m rate=10r/s;\n",
		"limit_req_zone $binary_remote_addr zone=crawl:10m rate=3r/m;\n",
		"map $limit_req_status $stompgate_retry_after_1s {",
		"map $limit_req_status $stompgate_retry_after_2s {",
		"map $limit_req_status $stompgate_retry_after_20s {",
		"location = /slow {\n            # nodelay: requests within the burst are served at once rather\n            # than spaced out at the rate; past the burst they get 429.\n            limit_req zone=slow nodelay;\n            error_page 429 @stompgate_429_2s;\n",
		"location = /fast {\n            # nodelay: requests within the burst are served at once rather\n            # than spaced out at the rate; past the burst they get 429.\n            limit_req zone=fast burst=2 nodelay;\n            error_page 429 @stompgate_429_1s;\n",
		"limit_req zone=slow nodelay;\n            limit_req zone=fast burst=2 nodelay;\n            error_page 429 @stompgate_429_2s;\n",
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
		{
			name: "WSPath routed to the API",
			policy: policy.Policy{Zones: []policy.Zone{
				{Name: "z", Rate: 1000, Routes: []policy.Route{{Method: "POST", Path: "/ws", Upstream: "api"}}},
			}},
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
		if err := tmpl.Execute(&buf, data); err != nil {
			b.Fatal(err)
		}
		sinkBytes = buf.Bytes()
	}
}
