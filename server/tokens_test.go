package server

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
)

// countingVerifier accepts "<name>/<anything>" as a token of name, valid
// for an hour, and counts its calls: each stands for a signature check.
type countingVerifier struct{ calls atomic.Int64 }

func (v *countingVerifier) Verify(token string, now time.Time) (*interceptor.Principal, error) {
	v.calls.Add(1)
	name, _, ok := strings.Cut(token, "/")
	if !ok {
		return nil, fmt.Errorf("token signature is invalid")
	}
	return &interceptor.Principal{Name: name, Expires: now.Add(time.Hour)}, nil
}

// TestTokenChurn runs the token attack against a real server: a session
// alternates two valid tokens of its own principal in a token header on
// every frame, which would cost a signature check per frame. The server
// checks each token once; a session sending new tokens past the budget
// is ended with ERROR and counted.
func TestTokenChurn(t *testing.T) {
	const checks = 5
	v := &countingVerifier{}
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{Verifier: v, TokenChecks: checks})
	if err != nil {
		t.Fatal(err)
	}
	// The inbound budget would pause this flood for seconds; it is not
	// what is tested here.
	ts := startServer(t, Config{Chain: interceptor.NewChain(nil, principal), InboundFrames: 1 << 20})

	c := dialRaw(t, ts.url)
	c.Send("CONNECT\naccept-version:1.2\nhost:x\nheart-beat:0,0\npasscode:alice/0\n\n\x00")
	c.Expect("CONNECTED")
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "ACK\nid:1\ntoken:alice/%d\n\n\x00", 1+i%2)
	}
	for range 5 {
		c.Send(b.String())
	}
	c.Send("UNSUBSCRIBE\nid:none\nreceipt:sync\n\n\x00")
	c.Expect("RECEIPT")
	if n := v.calls.Load(); n != 3 {
		t.Errorf("10,000 frames alternating two tokens: %d signature checks, want 3 (CONNECT's and one per token)", n)
	}

	// New tokens, every one different, are checked up to the budget,
	// which the two above have already drawn on.
	b.Reset()
	for i := range 100 {
		fmt.Fprintf(&b, "ACK\nid:1\ntoken:alice/new-%d\n\n\x00", i)
	}
	c.Send(b.String())
	e := c.Expect("ERROR")
	if got := e.Get("message"); got != "too many token checks" {
		t.Errorf("ERROR message %q, want %q", got, "too many token checks")
	}
	c.ExpectClosed()
	if n := v.calls.Load(); n != 1+checks {
		t.Errorf("100 new tokens: %d signature checks in all, want %d (CONNECT's and the budget)", n, 1+checks)
	}
	// The close is counted as the session ends, which may be a moment
	// after the client saw it.
	poll.Until(t, 10*time.Second, func() error {
		ts.obs.mu.Lock()
		flood := ts.obs.protocol[outcome.RejectTokenFlood.String()]
		ts.obs.mu.Unlock()
		if flood != 1 {
			return fmt.Errorf("ProtocolErrorClose(%q) reported %d times, want 1", outcome.RejectTokenFlood, flood)
		}
		return nil
	})
}
