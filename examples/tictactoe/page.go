package tictactoe

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
)

// pageFiles are the browser page: HTML, script and style, with no build
// step. The STOMP client, @stomp/stompjs, is wsserver's own copy.
//
//go:embed page/index.html page/game.js page/style.css
var pageFiles embed.FS

// StompJSPath is where the page loads @stomp/stompjs from: wsserver's
// copy, served with its demo page (-demo, on by default) and reached
// through PageHandler's proxy.
const StompJSPath = "/static/stompjs/stomp.umd.min.js"

// PageCSP is the page's Content-Security-Policy: its own script, style
// and WebSocket (CSP Level 3 reads 'self' as ws: and wss: to the same
// host), nothing inline, nothing from elsewhere, no framing.
const PageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// PageConfig configures PageHandler.
type PageConfig struct {
	// WSServer is the base URL of wsserver's public listener, e.g.
	// http://127.0.0.1:8080. Required.
	WSServer string
	// WSPath is wsserver's -ws-path. Default "/ws".
	WSPath string
}

// PageHandler serves the game's browser page, and passes the page's
// WebSocket (at /ws) and its STOMP client (StompJSPath) on to wsserver,
// so that the browser sees one origin: wsserver accepts the handshake
// without -allowed-origins, because the proxy keeps the Host the browser
// used, which is what the server compares the page's Origin with. It
// answers GET and HEAD; other paths get 404.
//
// Every tab is a player: each opens its own STOMP session, whose
// anonymous principal the backend tells apart. The proxy adds no
// X-Forwarded-For, so wsserver sees every player at the proxy's address
// and counts them together against its per-address limits (handshake
// rate, sessions per address): enough for a few tabs on one machine, not
// for a public deployment, which puts nginx in front of wsserver and
// serves the page from the same origin there.
func PageHandler(cfg PageConfig) (http.Handler, error) {
	target, err := url.Parse(cfg.WSServer)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("tictactoe: WSServer %q: want http://host:port or https://host:port", cfg.WSServer)
	}
	if cfg.WSPath == "" {
		cfg.WSPath = "/ws"
	}
	if !strings.HasPrefix(cfg.WSPath, "/") {
		return nil, fmt.Errorf("tictactoe: WSPath %q must start with /", cfg.WSPath)
	}
	files, err := fs.Sub(pageFiles, "page")
	if err != nil {
		return nil, err
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// The Host the browser used, port included: wsserver
			// compares the page's Origin with it.
			r.Out.Host = r.In.Host
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, files, "index.html") })
	mux.HandleFunc("GET /game.js", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, files, "game.js") })
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, files, "style.css") })
	mux.Handle("GET "+StompJSPath, proxy)
	ws := proxy
	if cfg.WSPath != "/ws" {
		// The page always dials /ws; wsserver listens at WSPath.
		ws = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = cfg.WSPath
			r.Out.URL.RawPath = ""
			r.Out.Host = r.In.Host
		}}
	}
	mux.Handle("GET /ws", ws)
	return mux, nil
}

// contentTypes are the page files' types, fixed here rather than read
// from the system's MIME tables, which may differ.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// serveFile writes one embedded file with its content type and the
// page's security headers.
func serveFile(w http.ResponseWriter, r *http.Request, files fs.FS, name string) {
	b, err := fs.ReadFile(files, name)
	if err != nil {
		http.Error(w, "tictactoe: missing page file", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentTypes[path.Ext(name)])
	h.Set("Content-Security-Policy", PageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
