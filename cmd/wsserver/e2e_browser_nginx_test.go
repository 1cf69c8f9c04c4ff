package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/nginx"
)

// originVisit is one entry of the JSON line e2e/browser/origin.mjs prints.
type originVisit struct {
	URL        string   `json:"url"`
	Connected  bool     `json:"connected"`
	State      string   `json:"state"`
	Status     string   `json:"status"`
	Sockets    int      `json:"sockets"`
	PageErrors []string `json:"pageErrors"`
}

// TestBrowserThroughNginxOnAnyPort opens the demo page in a real headless
// Chromium through the nginx configuration rendered from the policy, on
// ports other than 80 and 443, plain and with TLS. The browser's Origin
// carries the port, and the server compares it with the Host the proxy
// passes on: the page connects only if nginx passes the Host the browser
// used, port included.
func TestBrowserThroughNginxOnAnyPort(t *testing.T) {
	base, _ := startApp(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := selfSignedCert(t)
	plain := testnginx.FreePort(t)
	tlsPort := testnginx.FreePort(t)
	conf, err := nginx.Render(parsedTestPolicy(t), nginx.Config{
		Listen:       fmt.Sprintf("127.0.0.1:%d", plain),
		TLSListen:    fmt.Sprintf("127.0.0.1:%d", tlsPort),
		TLSCert:      cert,
		TLSKey:       key,
		WSUpstreams:  []string{u.Host},
		APIUpstreams: []string{u.Host},
		PIDFile:      "nginx.pid",
		ErrorLog:     "error.log",
		AccessLog:    "access.log",
		TempPath:     ".",
	})
	if err != nil {
		t.Fatalf("nginx.Render: %v", err)
	}
	testnginx.Start(t, conf)

	pages := []string{
		fmt.Sprintf("http://127.0.0.1:%d/", plain),
		fmt.Sprintf("https://127.0.0.1:%d/", tlsPort),
	}
	visitPages(t, pages)
	m := scrape(t, base)
	if got := m[`stompgate_handshakes_total{result="rejected_origin"}`]; got != 0 {
		t.Errorf("handshakes refused as cross-origin: %v, want 0", got)
	}
}

// visitPages opens each page in a real headless Chromium
// (e2e/browser/origin.mjs), joins a room and fails the test for each page
// that does not connect or throws.
func visitPages(t *testing.T, pages []string) {
	t.Helper()
	node, chromium := browserTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(browserDir, "origin.mjs")}, pages...)...)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node origin.mjs: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	line := strings.TrimSpace(stdout.String())
	t.Logf("browser observed: %s", line)
	var got []originVisit
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("origin.mjs output %q: %v", line, err)
	}
	if len(got) != len(pages) {
		t.Fatalf("origin.mjs reported %d pages, want %d", len(got), len(pages))
	}
	for i, v := range got {
		if v.URL != pages[i] {
			t.Errorf("entry %d is %s, want %s", i, v.URL, pages[i])
		}
		if !v.Connected {
			t.Errorf("%s: the page shows %q (%s), want connected", v.URL, v.Status, v.State)
		}
		if len(v.PageErrors) > 0 {
			t.Errorf("%s: uncaught exceptions in the page: %q", v.URL, v.PageErrors)
		}
	}
}

// selfSignedCert writes a certificate for 127.0.0.1 and its key, valid
// for an hour, as PEM files in a temporary directory, and returns their
// paths.
func selfSignedCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, certFile, keyFile, 1, time.Now())
	return certFile, keyFile
}

// writeSelfSigned writes a certificate for 127.0.0.1 with serial, valid
// for an hour, and its key to certFile and keyFile, both with the
// modification time mod.
func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64, mod time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{certFile, keyFile} {
		if err := os.Chtimes(f, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}
