package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pair is a certificate and key in PEM, told apart by serial.
type pair struct {
	cert, key []byte
	serial    int64
}

func newPair(t *testing.T, serial int64) pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "stompgate.test"},
		DNSNames:     []string{"stompgate.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pair{
		cert:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		serial: serial,
	}
}

// write puts cert and key in the files with the modification time mod,
// so that a change is seen whatever the file system's clock granularity.
func write(t *testing.T, certFile, keyFile string, cert, key []byte, mod time.Time) {
	t.Helper()
	for _, f := range []struct {
		name string
		b    []byte
	}{{certFile, cert}, {keyFile, key}} {
		if err := os.WriteFile(f.name, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.name, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

func serialOf(t *testing.T, c *tls.Certificate) int64 {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.Int64()
}

// TestReload steps through a renewal at fixed instants: a change is not
// looked at within CheckInterval, is served after it, a pair that fails
// to load keeps the previous one in service (logged once, not per look),
// and a fixed pair is served again.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	a, b, c := newPair(t, 1), newPair(t, 2), newPair(t, 3)
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	write(t, certFile, keyFile, a.cert, a.key, t0)

	var logs bytes.Buffer
	now := t0
	r, err := New(Config{CertFile: certFile, KeyFile: keyFile, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}

	steps := []struct {
		name       string
		at         time.Duration
		change     func()
		wantSerial int64
		wantWarns  int // "not reloaded" lines so far
	}{
		{"first pair", 0, nil, 1, 0},
		{"renewed, within the interval", 500 * time.Millisecond, func() { write(t, certFile, keyFile, b.cert, b.key, t0.Add(time.Minute)) }, 1, 0},
		{"renewed, interval passed", DefaultCheckInterval, nil, 2, 0},
		{"key of another pair", 2 * DefaultCheckInterval, func() { write(t, certFile, keyFile, b.cert, c.key, t0.Add(2*time.Minute)) }, 2, 1},
		{"same bad pair, looked at again", 3 * DefaultCheckInterval, nil, 2, 1},
		{"fixed", 4 * DefaultCheckInterval, func() { write(t, certFile, keyFile, c.cert, c.key, t0.Add(3*time.Minute)) }, 3, 1},
		{"files gone", 5 * DefaultCheckInterval, func() { os.Remove(certFile) }, 3, 2},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change()
		}
		now = t0.Add(st.at)
		cert, err := r.GetCertificate(nil)
		if err != nil {
			t.Fatalf("%s: GetCertificate: %v", st.name, err)
		}
		if got := serialOf(t, cert); got != st.wantSerial {
			t.Errorf("%s: GetCertificate(t0+%v) serves serial %d, want %d", st.name, st.at, got, st.wantSerial)
		}
		if got := strings.Count(logs.String(), "not reloaded"); got != st.wantWarns {
			t.Errorf("%s: %d warnings logged, want %d:\n%s", st.name, got, st.wantWarns, logs.String())
		}
	}
}

// TestNewErrors: New names what is missing or wrong.
func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	a, b := newPair(t, 1), newPair(t, 2)
	write(t, certFile, keyFile, a.cert, b.key, time.Now())
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"none", Config{}, "CertFile and KeyFile are empty"},
		{"no key", Config{CertFile: certFile}, "KeyFile is empty"},
		{"no cert", Config{KeyFile: keyFile}, "CertFile is empty"},
		{"negative interval", Config{CertFile: certFile, KeyFile: keyFile, CheckInterval: -time.Second}, "CheckInterval -1s is negative"},
		{"missing file", Config{CertFile: filepath.Join(dir, "nope.pem"), KeyFile: keyFile}, "nope.pem"},
		{"mismatched pair", Config{CertFile: certFile, KeyFile: keyFile}, "private key does not match public key"},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "tlscert: ") {
			t.Errorf("%s: New = %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
