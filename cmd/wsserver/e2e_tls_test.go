package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testproc"
)

// TestServerTLS runs the program with -tls-cert and -tls-key: a real TLS
// client speaks STOMP over wss://; the certificate files are replaced
// and new handshakes get the new certificate within the reload interval,
// without a restart, while the session opened before keeps working; and
// a real Chromium opens the demo page over https:// and connects.
func TestServerTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	t0 := time.Now().Add(-time.Hour)
	writeSelfSigned(t, certFile, keyFile, 1, t0)

	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-admin-addr", "127.0.0.1:0", "-log-level", "error",
			"-tls-cert", certFile, "-tls-key", keyFile, "-policy", testPolicyFile(t)},
			func(string) string { return "" }, os.Stdout)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	// serial dials TLS trusting nothing but checking the chain by hand,
	// and returns the serial number the server presents.
	serial := func() (int64, error) {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
	}
	waitFor(t, clientTimeout, func() error {
		_, err := serial()
		return err
	})
	if s, _ := serial(); s != 1 {
		t.Fatalf("server presents serial %d, want 1", s)
	}

	// A client that verifies the chain against the certificate itself.
	pool := x509.NewCertPool()
	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pemBytes)
	dctx, dcancel := context.WithTimeout(context.Background(), clientTimeout)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, "wss://"+addr+"/ws", &websocket.DialOptions{
		Subprotocols: []string{stomptest.Subprotocol},
		HTTPClient:   &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	})
	if err != nil {
		t.Fatalf("wss handshake: %v", err)
	}
	c := connectStomp(t, ws)
	sub := subscribe(t, c, "/topic/tls")
	send := func(body string) {
		t.Helper()
		if err := c.Send("/topic/tls", "text/plain", []byte(body), stomp.SendOpt.Receipt); err != nil {
			t.Fatalf("SEND over wss: %v", err)
		}
		if m := nextMessage(t, sub); string(m.Body) != body {
			t.Fatalf("MESSAGE over wss: %q, want %q", m.Body, body)
		}
	}
	send("before renewal")

	writeSelfSigned(t, certFile, keyFile, 2, t0.Add(time.Minute))
	waitFor(t, clientTimeout, func() error {
		s, err := serial()
		if err != nil {
			return err
		}
		if s != 2 {
			return fmt.Errorf("server presents serial %d, want the renewed 2", s)
		}
		return nil
	})
	send("after renewal, same session")
	disconnect(t, c)

	visitPages(t, []string{"https://" + addr + "/"})
}
