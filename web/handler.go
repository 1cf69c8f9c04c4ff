package web

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"

	"github.com/stompgate/stompgate/interceptor"
)

// indexTemplate is the page. It is rendered once per Handler, with the
// WebSocket path in a <meta> tag and every static link carrying its
// file's version.
//
//go:embed index.html.tmpl
var indexTemplate string

// contentSecurityPolicy lets the page load its own script, style and
// icon, and talk to its own origin (fetch and, as CSP Level 3 reads
// 'self', ws: and wss: to the same host), and nothing else: no inline
// code, no third-party origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// site is what a Handler serves, prepared once.
type site struct {
	index  *asset
	static map[string]*asset
	counts func(id string) (interceptor.Counts, bool)
}

// Handler returns the handler of the demo page, its static files and the
// counts endpoint (see the package comment for the routes). It answers
// GET and HEAD; other methods get 405, other paths 404. Mount it at "/"
// of the server's mux beside the WebSocket path: the mux prefers the
// longer patterns (/ws, /metrics) and sends the rest here.
//
// Handler is safe for concurrent use.
func Handler(cfg Config) http.Handler {
	s, err := newSite(cfg.withDefaults())
	if err != nil {
		// Only a broken build gets here (the files are embedded); the
		// package's tests render the page.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveIndex)
	mux.HandleFunc("GET /static/{file...}", s.serveStatic)
	mux.HandleFunc("GET /api/sessions/{id}/counts", s.serveCounts)
	return mux
}

// newSite loads the embedded files and renders the page for cfg, whose
// defaults are filled.
func newSite(cfg Config) (*site, error) {
	static, err := loadAssets(staticFiles, "static")
	if err != nil {
		return nil, fmt.Errorf("web: loading static files: %w", err)
	}
	page, err := renderIndex(cfg, static)
	if err != nil {
		return nil, err
	}
	return &site{index: newAsset(page, contentTypes[".html"]), static: static, counts: cfg.Counts}, nil
}

// renderIndex executes indexTemplate for cfg.
func renderIndex(cfg Config, static map[string]*asset) ([]byte, error) {
	funcs := template.FuncMap{
		// asset returns the page-relative link to a static file, with
		// its version.
		"asset": func(name string) (string, error) {
			a, ok := static[name]
			if !ok {
				return "", fmt.Errorf("no static file %q", name)
			}
			return "static/" + name + "?v=" + a.version, nil
		},
	}
	t, err := template.New("index.html").Funcs(funcs).Parse(indexTemplate)
	if err != nil {
		return nil, fmt.Errorf("web: parsing the page: %w", err)
	}
	var buf bytes.Buffer
	data := struct {
		WSPath   string
		Presence bool
	}{cfg.WSPath, cfg.Presence}
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("web: rendering the page: %w", err)
	}
	return buf.Bytes(), nil
}

// serveIndex serves the page. It must be revalidated on every load, so
// that a new binary's page (and through its links, its files) is seen at
// once.
func (s *site) serveIndex(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Referrer-Policy", "no-referrer")
	serveAsset(w, r, s.index, cacheRevalidate)
}

// serveStatic serves a file under /static/: cacheable for a year when
// asked for with its current version, revalidated otherwise.
func (s *site) serveStatic(w http.ResponseWriter, r *http.Request) {
	a, ok := s.static[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	cache := cacheRevalidate
	if r.URL.Query().Get("v") == a.version {
		cache = cacheImmutable
	}
	serveAsset(w, r, a, cache)
}
