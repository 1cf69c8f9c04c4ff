package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// staticFiles are the files served under /static/: the page's script and
// style sheet and the vendored @stomp/stompjs bundle with its licence.
//
//go:embed static
var staticFiles embed.FS

// Cache-Control values. A static file asked for with the hash of its
// current content (?v=) never changes and is cached for a year; anything
// else is revalidated on every use, which costs a 304 when unchanged.
const (
	cacheImmutable  = "public, max-age=31536000, immutable"
	cacheRevalidate = "no-cache"
	cacheNever      = "no-store"
)

// hashLen is the number of hex digits of a file's SHA-256 kept for its
// version and ETag: 64 bits tell a handful of files' versions apart.
const hashLen = 16

// contentTypes maps the extensions of the embedded files to their
// Content-Type. It is a fixed table rather than mime.TypeByExtension,
// which reads the host's mime.types and so may differ between machines.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	"":      "text/plain; charset=utf-8", // LICENSE, VERSION
}

// fallbackContentType is the type of a file whose extension is not in
// contentTypes; the tests keep every embedded file out of it.
const fallbackContentType = "application/octet-stream"

// asset is one file prepared for serving.
type asset struct {
	body        []byte
	contentType string
	// version is the first hashLen hex digits of the SHA-256 of body,
	// the v= query value of the page's links.
	version string
	// etag is version as an HTTP entity tag.
	etag string
}

func newAsset(body []byte, contentType string) *asset {
	sum := sha256.Sum256(body)
	v := hex.EncodeToString(sum[:])[:hashLen]
	return &asset{body: body, contentType: contentType, version: v, etag: `"` + v + `"`}
}

// contentType returns the Content-Type of the file name.
func contentType(name string) string {
	if t, ok := contentTypes[path.Ext(name)]; ok {
		return t
	}
	return fallbackContentType
}

// loadAssets reads every file of fsys under dir, keyed by its path
// relative to dir.
func loadAssets(fsys fs.FS, dir string) (map[string]*asset, error) {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, err
	}
	assets := map[string]*asset{}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		assets[name] = newAsset(body, contentType(name))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return assets, nil
}

// serveAsset writes a, honouring If-None-Match and Range. cache is the
// Cache-Control value.
func serveAsset(w http.ResponseWriter, r *http.Request, a *asset, cache string) {
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", cache)
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
