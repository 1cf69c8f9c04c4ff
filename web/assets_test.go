package web

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"
)

// TestEveryStaticFileHasAType keeps files of unknown type out of static/:
// they would be served as application/octet-stream.
func TestEveryStaticFileHasAType(t *testing.T) {
	t.Parallel()
	assets, err := loadAssets(staticFiles, "static")
	if err != nil {
		t.Fatalf("loadAssets: %v", err)
	}
	if len(assets) == 0 {
		t.Fatal("loadAssets: no files")
	}
	for name, a := range assets {
		if a.contentType == fallbackContentType {
			t.Errorf("static/%s: no Content-Type in contentTypes for its extension", name)
		}
	}
}

// TestVendoredStompJS checks the vendored bundle against its VERSION note,
// so that an update of the file without the note (or the reverse) fails.
func TestVendoredStompJS(t *testing.T) {
	t.Parallel()
	bundle, err := staticFiles.ReadFile("static/stompjs/stomp.umd.min.js")
	if err != nil {
		t.Fatalf("reading the bundle: %v", err)
	}
	note, err := staticFiles.ReadFile("static/stompjs/VERSION")
	if err != nil {
		t.Fatalf("reading VERSION: %v", err)
	}
	m := regexp.MustCompile(`(?m)^sha256:\s+([0-9a-f]{64})$`).FindSubmatch(note)
	if m == nil {
		t.Fatal("VERSION has no sha256: line")
	}
	sum := sha256.Sum256(bundle)
	if got, want := hex.EncodeToString(sum[:]), string(m[1]); got != want {
		t.Errorf("stomp.umd.min.js sha256: got %s, want %s (from VERSION)", got, want)
	}
	if _, err := staticFiles.ReadFile("static/stompjs/LICENSE"); err != nil {
		t.Errorf("the bundle's LICENSE: %v", err)
	}
}

func TestNewSite(t *testing.T) {
	t.Parallel()
	s, err := newSite(Config{}.withDefaults())
	if err != nil {
		t.Fatalf("newSite: %v", err)
	}
	if len(s.index.body) == 0 {
		t.Error("newSite: empty page")
	}
}
