package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stompgate/stompgate/admission"
)

// A handshake the server's listener refuses at accept, with its
// prebuilt 503 written before the request is read and the connection
// closed (reset, the request being unread), still reads as a 503 with
// its Retry-After, so Backoff waits for it.
func TestDialRefusedAtAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// One connection, then one every 1000 s: every dial below is past
	// the bound.
	bounded, err := admission.NewListener(ln, admission.ListenerConfig{Rate: 0.001, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(bounded)
	}()
	defer func() {
		_ = hs.Close()
		<-served
	}()
	d := &Dialer{URL: "ws://" + ln.Addr().String() + "/ws", Host: "/"}
	// A connection each, as a reconnecting client opens.
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	// The one connection within the bound reaches the server (which has
	// no WebSocket path).
	var he *HandshakeError
	if _, err := d.Dial(context.Background(), &http.Client{Transport: tr}, "0,0"); !errors.As(err, &he) || he.Status != http.StatusNotFound {
		t.Fatalf("first dial: %v, want the server's 404", err)
	}
	for i := range 20 {
		_, err := d.Dial(context.Background(), &http.Client{Transport: tr}, "0,0")
		if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable {
			t.Fatalf("dial %d: %v, want the 503 of the listener", i, err)
		}
		if ra := RetryAfter(err); ra < time.Second || ra > 2*time.Second {
			t.Fatalf("dial %d: Retry-After %v, want 1 or 2 s", i, ra)
		}
	}
}
