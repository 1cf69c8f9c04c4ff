package tictactoe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// get fetches url and returns the response with its body read.
func get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestPageServed checks the page's files: their types, the CSP that
// allows only the page's own scripts and WebSocket, no inline script or
// style for it to forbid, and a script that speaks the backend's
// destinations. The STOMP client comes from wsserver through the proxy,
// which passes the browser's Host on.
func TestPageServed(t *testing.T) {
	var upstreamHost string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamHost = r.Host
		if r.URL.Path != StompJSPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		io.WriteString(w, "var StompJs = {};")
	}))
	defer upstream.Close()
	h, err := PageHandler(PageConfig{WSServer: upstream.URL})
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(h)
	defer page.Close()
	defer http.DefaultClient.CloseIdleConnections()

	for _, f := range []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/game.js", "text/javascript; charset=utf-8"},
		{"/style.css", "text/css; charset=utf-8"},
	} {
		resp, _ := get(t, "GET", page.URL+f.path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != f.ctype {
			t.Errorf("GET %s: %s %q, want 200 %q", f.path, resp.Status, resp.Header.Get("Content-Type"), f.ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != PageCSP {
			t.Errorf("GET %s: CSP %q, want %q", f.path, csp, PageCSP)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", f.path)
		}
	}
	for _, dir := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(PageCSP, dir) {
			t.Errorf("PageCSP lacks %q", dir)
		}
	}

	_, html := get(t, "GET", page.URL+"/")
	for _, want := range []string{`<script src="` + StompJSPath + `" defer>`, `<script src="game.js" defer>`, `id="board"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if n := strings.Count(html, `data-cell="`); n != 9 {
		t.Errorf("the board has %d cells, want 9", n)
	}
	if m := regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]|<style|\sstyle=|\son[a-z]+=`).FindString(html); m != "" {
		t.Errorf("inline code the CSP would block: %q", m)
	}
	_, js := get(t, "GET", page.URL+"/game.js")
	for _, want := range []string{JoinDestination, MoveDestination, "/user/queue/" + PrivateQueue, "'/topic/game.' + game", "location.host + '/ws'", "reconnectDelay: 0"} {
		if !strings.Contains(js, want) {
			t.Errorf("game.js lacks %q", want)
		}
	}
	if strings.Contains(js, "innerHTML") {
		t.Error("game.js writes HTML; the server's texts must go in as text")
	}

	resp, body := get(t, "GET", page.URL+StompJSPath)
	if resp.StatusCode != http.StatusOK || body != "var StompJs = {};" {
		t.Fatalf("GET %s through the proxy: %s %q", StompJSPath, resp.Status, body)
	}
	if want := strings.TrimPrefix(page.URL, "http://"); upstreamHost != want {
		t.Fatalf("wsserver saw Host %q, want the browser's %q", upstreamHost, want)
	}
	if resp, _ := get(t, "GET", page.URL+"/static/app.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /static/app.js: %s, want 404 (only the STOMP client is passed on)", resp.Status)
	}
	if resp, _ := get(t, "POST", page.URL+"/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %s, want 405", resp.Status)
	}
}

func TestPageHandlerValidates(t *testing.T) {
	for _, cfg := range []PageConfig{
		{},
		{WSServer: "ws://127.0.0.1:8080"},
		{WSServer: "127.0.0.1:8080"},
		{WSServer: "http://127.0.0.1:8080", WSPath: "ws"},
	} {
		if _, err := PageHandler(cfg); err == nil || !strings.HasPrefix(err.Error(), "tictactoe: ") {
			t.Errorf("PageHandler(%+v) = %v, want a tictactoe: error", cfg, err)
		}
	}
}
