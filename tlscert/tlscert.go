package tlscert

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultCheckInterval is the default Config.CheckInterval: a renewed
// certificate is served within a second of being written, for two stat
// calls a second on a busy server.
const DefaultCheckInterval = time.Second

// Config configures a Reloader. CertFile and KeyFile are required.
type Config struct {
	// CertFile is the PEM certificate chain, leaf first.
	CertFile string
	// KeyFile is the PEM private key of the leaf.
	KeyFile string
	// CheckInterval is the least time between two looks at the files.
	// Zero means DefaultCheckInterval; negative is an error.
	CheckInterval time.Duration
	// Logger receives one line per reload and per pair that fails to
	// load. Nil means slog.Default().
	Logger *slog.Logger
	// Now, when set, replaces time.Now (tests).
	Now func() time.Time
}

// Reloader serves the certificate of a pair of files through
// GetCertificate, loading it again when the files change (see the package
// comment). It is safe for concurrent use; create it with New.
type Reloader struct {
	cfg Config

	// mu guards the fields below.
	mu       sync.Mutex
	cert     *tls.Certificate // the pair in service
	served   stamp            // the files' stamp when cert was loaded
	failed   stamp            // the stamp of the last pair that failed to load; zero: none
	lastLook time.Time        // when the files were last looked at
}

// stamp tells one version of the pair of files from another.
type stamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

// New loads the pair once and returns a Reloader serving it, or an error
// naming the file that could not be read or the pair that does not match.
func New(cfg Config) (*Reloader, error) {
	switch {
	case cfg.CertFile == "" && cfg.KeyFile == "":
		return nil, errors.New("tlscert: Config.CertFile and KeyFile are empty")
	case cfg.CertFile == "":
		return nil, fmt.Errorf("tlscert: Config.CertFile is empty but KeyFile %q is set", cfg.KeyFile)
	case cfg.KeyFile == "":
		return nil, fmt.Errorf("tlscert: Config.KeyFile is empty but CertFile %q is set", cfg.CertFile)
	case cfg.CheckInterval < 0:
		return nil, fmt.Errorf("tlscert: Config.CheckInterval %v is negative", cfg.CheckInterval)
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reloader{cfg: cfg}
	st, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cert, r.served, r.lastLook = cert, st, cfg.Now()
	return r, nil
}

// TLSConfig returns a server configuration that serves r's certificate:
// TLS 1.2 or newer, HTTP/1.1 only (a WebSocket upgrade is an HTTP/1.1
// request).
func (r *Reloader) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: r.GetCertificate,
	}
}

// GetCertificate returns the certificate in service, first loading the
// files again if they changed since they were last looked at, at most
// once per Config.CheckInterval. It never fails once New has succeeded: a
// pair that does not load leaves the previous one in service.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.CertificateAt(r.cfg.Now()), nil
}

// CertificateAt is GetCertificate at the time now.
func (r *Reloader) CertificateAt(now time.Time) *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastLook) < r.cfg.CheckInterval {
		return r.cert
	}
	r.lastLook = now
	st, err := r.stat()
	if err != nil {
		r.failedLocked(stamp{}, err)
		return r.cert
	}
	if st == r.served || st == r.failed {
		return r.cert
	}
	cert, err := r.load()
	if err != nil {
		r.failedLocked(st, err)
		return r.cert
	}
	r.cert, r.served, r.failed = cert, st, stamp{}
	r.cfg.Logger.Info("tls certificate reloaded", "cert", r.cfg.CertFile, "not_after", cert.Leaf.NotAfter)
	return r.cert
}

// failedLocked logs a pair that failed to load, once per stamp (a zero
// stamp, the files could not even be stat'ed, logs each look).
func (r *Reloader) failedLocked(st stamp, err error) {
	if st != (stamp{}) && st == r.failed {
		return
	}
	r.failed = st
	r.cfg.Logger.Warn("tls certificate not reloaded; the previous one stays in service", "err", err)
}

// stat returns the stamp of the files.
func (r *Reloader) stat() (stamp, error) {
	c, err := os.Stat(r.cfg.CertFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tlscert: certificate: %w", err)
	}
	k, err := os.Stat(r.cfg.KeyFile)
	if err != nil {
		return stamp{}, fmt.Errorf("tlscert: key: %w", err)
	}
	return stamp{certMod: c.ModTime(), keyMod: k.ModTime(), certSize: c.Size(), keySize: k.Size()}, nil
}

// load reads and parses the pair.
func (r *Reloader) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(r.cfg.CertFile, r.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tlscert: %s and %s: %w", r.cfg.CertFile, r.cfg.KeyFile, err)
	}
	return &cert, nil
}
