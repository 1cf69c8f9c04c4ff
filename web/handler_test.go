package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// get sends a request to h and returns the recorded response and body.
func get(t *testing.T, h http.Handler, method, target string, header http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, target, err)
	}
	return resp, string(body)
}

// linkPattern finds the page's links to its static files.
var linkPattern = regexp.MustCompile(`(?:href|src)="(static/[^"?]+)\?v=([0-9a-f]+)"`)

func TestHandlerRoutes(t *testing.T) {
	t.Parallel()
	h := Handler(Config{})
	tests := []struct {
		name        string
		method      string
		target      string
		wantStatus  int
		wantType    string // prefix of Content-Type; "" skips the check
		wantCache   string // "" skips the check
		wantInBody  string
		wantNoStore bool
	}{
		{name: "page", method: "GET", target: "/", wantStatus: 200, wantType: "text/html; charset=utf-8", wantCache: "no-cache", wantInBody: `<meta name="stompgate-ws-path" content="/ws">`},
		{name: "page HEAD", method: "HEAD", target: "/", wantStatus: 200, wantType: "text/html; charset=utf-8", wantCache: "no-cache"},
		{name: "script without version", method: "GET", target: "/static/app.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantCache: "no-cache", wantInBody: "StompJs.Client"},
		{name: "script with stale version", method: "GET", target: "/static/app.js?v=0000000000000000", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantCache: "no-cache"},
		{name: "reconnect helper", method: "GET", target: "/static/reconnect.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantCache: "no-cache", wantInBody: "StompgateReconnect"},
		{name: "style sheet", method: "GET", target: "/static/style.css", wantStatus: 200, wantType: "text/css; charset=utf-8", wantCache: "no-cache"},
		{name: "icon", method: "GET", target: "/static/favicon.svg", wantStatus: 200, wantType: "image/svg+xml", wantCache: "no-cache"},
		{name: "stompjs bundle", method: "GET", target: "/static/stompjs/stomp.umd.min.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantInBody: "StompJs"},
		{name: "stompjs licence", method: "GET", target: "/static/stompjs/LICENSE", wantStatus: 200, wantType: "text/plain; charset=utf-8", wantInBody: "Apache License"},
		{name: "stompjs version note", method: "GET", target: "/static/stompjs/VERSION", wantStatus: 200, wantType: "text/plain; charset=utf-8", wantInBody: "@stomp/stompjs 7.5.0"},
		{name: "missing static file", method: "GET", target: "/static/nope.js", wantStatus: 404},
		{name: "static directory", method: "GET", target: "/static/", wantStatus: 404},
		{name: "static subdirectory", method: "GET", target: "/static/stompjs", wantStatus: 404},
		{name: "template is not served", method: "GET", target: "/static/index.html.tmpl", wantStatus: 404},
		{name: "other path", method: "GET", target: "/index.html", wantStatus: 404},
		{name: "api root", method: "GET", target: "/api/sessions/", wantStatus: 404},
		{name: "POST page", method: "POST", target: "/", wantStatus: 405},
		{name: "DELETE counts", method: "DELETE", target: "/api/sessions/x/counts", wantStatus: 405},
		{name: "counts without a source", method: "GET", target: "/api/sessions/x/counts", wantStatus: 404, wantType: "application/json", wantNoStore: true, wantInBody: `"error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := get(t, h, tt.method, tt.target, nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("%s %s: got status %d, want %d (body %q)", tt.method, tt.target, resp.StatusCode, tt.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); tt.wantType != "" && !strings.HasPrefix(ct, tt.wantType) {
				t.Errorf("Content-Type: got %q, want %q", ct, tt.wantType)
			}
			if cc := resp.Header.Get("Cache-Control"); tt.wantCache != "" && cc != tt.wantCache {
				t.Errorf("Cache-Control: got %q, want %q", cc, tt.wantCache)
			}
			if cc := resp.Header.Get("Cache-Control"); tt.wantNoStore && cc != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", cc)
			}
			if resp.StatusCode == 200 && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q, want nosniff", resp.Header.Get("X-Content-Type-Options"))
			}
			if !strings.Contains(body, tt.wantInBody) {
				t.Errorf("body does not contain %q", tt.wantInBody)
			}
			if tt.method == "HEAD" && body != "" {
				t.Errorf("HEAD body: got %d bytes, want 0", len(body))
			}
		})
	}
}

func TestHandlerMethodNotAllowedSaysAllow(t *testing.T) {
	t.Parallel()
	resp, _ := get(t, Handler(Config{}), "POST", "/static/app.js", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /static/app.js: got status %d, want 405", resp.StatusCode)
	}
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("Allow: got %q, want it to list GET", allow)
	}
}

func TestPageSecurityHeaders(t *testing.T) {
	t.Parallel()
	resp, _ := get(t, Handler(Config{}), "GET", "/", nil)
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q: missing %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q allows inline code", csp)
	}
	if got := resp.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy: got %q, want no-referrer", got)
	}
}

// TestPageLinksAreVersioned follows every static link of the page: each
// resolves, and with its v= query it is cacheable for a year.
func TestPageLinksAreVersioned(t *testing.T) {
	t.Parallel()
	h := Handler(Config{})
	_, page := get(t, h, "GET", "/", nil)
	links := linkPattern.FindAllStringSubmatch(page, -1)
	if len(links) != 5 {
		t.Fatalf("page links %d versioned static files, want 5 (icon, style, stompjs, reconnect, app): %q", len(links), links)
	}
	for _, l := range links {
		target := "/" + l[1] + "?v=" + l[2]
		resp, body := get(t, h, "GET", target, nil)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: got status %d, want 200", target, resp.StatusCode)
			continue
		}
		if body == "" {
			t.Errorf("GET %s: empty body", target)
		}
		if got := resp.Header.Get("Cache-Control"); got != cacheImmutable {
			t.Errorf("GET %s: Cache-Control %q, want %q", target, got, cacheImmutable)
		}
		if got, want := resp.Header.Get("ETag"), `"`+l[2]+`"`; got != want {
			t.Errorf("GET %s: ETag %q, want %q", target, got, want)
		}
	}
}

// TestRevalidation checks that an unchanged file costs a 304.
func TestRevalidation(t *testing.T) {
	t.Parallel()
	h := Handler(Config{})
	for _, target := range []string{"/", "/static/style.css"} {
		resp, _ := get(t, h, "GET", target, nil)
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", target)
		}
		resp, body := get(t, h, "GET", target, http.Header{"If-None-Match": {etag}})
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s: got status %d, want 304", target, etag, resp.StatusCode)
		}
		if body != "" {
			t.Errorf("GET %s 304: got %d body bytes, want 0", target, len(body))
		}
	}
}

func TestWSPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		wsPath string
		want   string
	}{
		{name: "default", wsPath: "", want: "/ws"},
		{name: "custom", wsPath: "/stomp", want: "/stomp"},
		{name: "without slash", wsPath: "game/ws", want: "/game/ws"},
		{name: "escaped", wsPath: `/a"><script>`, want: "/a&#34;&gt;&lt;script&gt;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, page := get(t, Handler(Config{WSPath: tt.wsPath}), "GET", "/", nil)
			want := `<meta name="stompgate-ws-path" content="` + tt.want + `">`
			if !strings.Contains(page, want) {
				t.Errorf("WSPath %q: page does not contain %s", tt.wsPath, want)
			}
		})
	}
}

// TestMountedBesideWebSocket mounts the handler as the server does: at
// "/" of a mux that also has the WebSocket path and other routes.
func TestMountedBesideWebSocket(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.Handle("/ws", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ws") }))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.Handle("/", Handler(Config{}))
	tests := []struct {
		target     string
		wantStatus int
		wantBody   string
	}{
		{"/ws", 200, "ws"},
		{"/healthz", 200, "ok"},
		{"/", 200, "<title>stompgate chat</title>"},
		{"/static/app.js", 200, "StompJs"},
		{"/elsewhere", 404, ""},
	}
	for _, tt := range tests {
		resp, body := get(t, mux, "GET", tt.target, nil)
		if resp.StatusCode != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
			t.Errorf("GET %s: got %d %.40q, want %d containing %q", tt.target, resp.StatusCode, body, tt.wantStatus, tt.wantBody)
		}
	}
}
