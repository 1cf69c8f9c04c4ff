package nginx

// Every shape of the rendered configuration, run in a real nginx: as a
// conf.d file and as a full nginx.conf, with and without TLS, with and
// without an API, on a WebSocket path that is not the policy's.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/policy"
)

// testCertificate writes a self-signed ECDSA certificate for 127.0.0.1
// and its key into a directory removed when the test ends, and returns
// the two file names.
func testCertificate(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stompgate test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// trusting returns a client like newClient whose TLS trusts certFile.
func trusting(t *testing.T, baseURL, certFile string) *client {
	t.Helper()
	c := newClient(t, baseURL)
	pemData, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("no certificate in %s", certFile)
	}
	tr := c.http.Transport.(*http.Transport)
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	// Redirects are what the plain server answers; they are checked, not
	// followed.
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// TestNginxVariants starts nginx on each shape of the configuration and
// sends requests through it: the handshake limit lands on the WebSocket
// path the wsserver serves (/stomp here, not the policy's /ws); /, /healthz
// and the old /ws reach the wsserver unlimited; /metrics is not served; the
// API routes reach the API only when one is given; with TLS, HTTPS serves
// with the test certificate and plain HTTP redirects to it.
func TestNginxVariants(t *testing.T) {
	t.Parallel()
	certFile, keyFile := testCertificate(t)
	for _, full := range []bool{false, true} {
		for _, withTLS := range []bool{false, true} {
			for _, withAPI := range []bool{false, true} {
				name := fmt.Sprintf("full=%v/tls=%v/api=%v", full, withTLS, withAPI)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ws, api := newRecorder(t), newRecorder(t)
					cfg := testConfig(testnginx.FreePort(t), []string{ws.addr()}, nil)
					cfg.Full = full
					cfg.WSPath = "/stomp"
					if withAPI {
						cfg.APIUpstreams = []string{api.addr()}
					}
					var tlsPort int
					if withTLS {
						tlsPort = testnginx.FreePort(t)
						cfg.TLSCert, cfg.TLSKey = certFile, keyFile
						cfg.TLSListen = "127.0.0.1:" + strconv.Itoa(tlsPort)
					}
					p := policy.Default()
					conf, err := Render(p, cfg)
					if err != nil {
						t.Fatalf("Render = %v", err)
					}
					srv := testnginx.Start(t, conf)
					base := srv.URL
					newC := func() *client { return newClient(t, base) }
					if withTLS {
						base = "https://127.0.0.1:" + strconv.Itoa(tlsPort)
						newC = func() *client { return trusting(t, base, certFile) }
						checkRedirect(t, srv, base, certFile)
					}
					checkVariant(t, p, base, newC, ws, api, withAPI)
				})
			}
		}
	}
}

// checkRedirect: plain HTTP answers every path with a 308 to the same
// path on HTTPS, and logs it without the query.
func checkRedirect(t *testing.T, srv *testnginx.Server, tlsURL, certFile string) {
	t.Helper()
	c := trusting(t, srv.URL, certFile)
	const secret = "eyJhbGciOiJIUzI1NiJ9.cmVkaXJlY3Q.c2ln"
	for _, path := range []string{"/", "/stomp?access_token=" + secret, "/rooms?x=1"} {
		req, err := http.NewRequest("POST", srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatalf("POST %s over plain HTTP: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != tlsURL+path {
			t.Errorf("POST %s over plain HTTP = %d Location %q, want 308 to %s", path, resp.StatusCode, resp.Header.Get("Location"), tlsURL+path)
		}
	}
	poll.Until(t, 10*time.Second, func() error {
		if log := srv.ReadFile("access.log"); !strings.Contains(log, `"POST /stomp HTTP/1.1" 308`) {
			return fmt.Errorf("access.log lacks the redirect of POST /stomp:\n%s", log)
		}
		return nil
	})
	if log := srv.ReadFile("access.log"); strings.Contains(log, secret) {
		t.Errorf("access.log holds the token of a redirected request:\n%s", log)
	}
}

// checkVariant sends the requests every variant must answer alike.
func checkVariant(t *testing.T, p policy.Policy, base string, newC func() *client, ws, api *recorder, withAPI bool) {
	t.Helper()
	zone, _ := p.Zone(policy.ZoneHandshake)
	upgrade := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}

	// The handshake limit is on /stomp, the path the wsserver serves.
	var c *client
	var got []answer
	for attempt := 1; ; attempt++ {
		c = newC()
		start := time.Now()
		got = c.send(t, "GET", "/stomp", upgrade, zone.Burst+2)
		if time.Since(start) < zone.Rate.Interval()*9/10 {
			break
		}
		if attempt == rapidAttempts {
			t.Fatalf("handshakes took too long in %d attempts: the machine is too loaded to test a %s limit", attempt, zone.Rate)
		}
	}
	wantPass(t, got[:zone.Burst+1], "GET /stomp")
	want429(t, got[zone.Burst+1], fmt.Sprintf("GET /stomp #%d", zone.Burst+2), 1)
	reached := ws.from(c.ip)
	if len(reached) != zone.Burst+1 {
		t.Fatalf("ws upstream got %d handshakes from %s, want %d", len(reached), c.ip, zone.Burst+1)
	}
	for _, r := range reached {
		if r.path != "/stomp" || r.header.Get("Upgrade") != "websocket" {
			t.Errorf("ws upstream got %s %s Upgrade %q, want /stomp with Upgrade websocket", r.method, r.path, r.header.Get("Upgrade"))
		}
	}

	// The policy's own path is no longer a limited WebSocket endpoint; it
	// and the wsserver's other pages go to the wsserver unlimited.
	c = newC()
	for _, path := range []string{"/ws", "/", "/healthz", "/readyz", "/index.html"} {
		wantPass(t, c.send(t, "GET", path, upgrade, zone.Burst+3), "GET "+path)
	}
	scheme, _, _ := strings.Cut(base, ":")
	for _, r := range ws.from(c.ip) {
		if r.header.Get("Upgrade") != "" {
			t.Errorf("GET %s reached the wsserver with Upgrade %q: only /stomp carries WebSockets", r.path, r.header.Get("Upgrade"))
		}
		if got := r.header.Get("X-Forwarded-Proto"); got != scheme {
			t.Errorf("GET %s reached the wsserver with X-Forwarded-Proto %q, want %q", r.path, got, scheme)
		}
	}
	if got := c.send(t, "GET", "/metrics", nil, 1)[0]; got.status != http.StatusNotFound {
		t.Errorf("GET /metrics = %d %q, want 404 from nginx", got.status, got.body)
	}

	// POST /rooms: limited and sent to the API when there is one, else the
	// wsserver's, unlimited.
	c = newC()
	got = c.send(t, "POST", "/rooms", nil, 7)
	if withAPI {
		wantPass(t, got[:5], "POST /rooms")
		if got[5].status != http.StatusTooManyRequests && got[6].status != http.StatusTooManyRequests {
			t.Errorf("POST /rooms #6 and #7 = %d, %d, want a 429 past the burst of room_create", got[5].status, got[6].status)
		}
		if n := len(api.from(c.ip)); n < 5 || n > 6 {
			t.Errorf("api upstream got %d POST /rooms, want 5 or 6", n)
		}
		if n := len(ws.from(c.ip)); n != 0 {
			t.Errorf("ws upstream got %d POST /rooms, want 0", n)
		}
	} else {
		wantPass(t, got, "POST /rooms without an API")
		if n := len(ws.from(c.ip)); n != 7 {
			t.Errorf("ws upstream got %d POST /rooms, want 7", n)
		}
	}
}
