package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// closerStage counts the sessions the chain reports closed.
type closerStage struct{ closed atomic.Int32 }

func (c *closerStage) Handle(*interceptor.Session, *stompframe.Frame, time.Time) interceptor.Result {
	return interceptor.Continue()
}
func (c *closerStage) SessionClosed(*interceptor.Session) { c.closed.Add(1) }

func TestOnSessionEndAndCloser(t *testing.T) {
	cl := &closerStage{}
	srv, err := New(Config{Chain: interceptor.NewChain(nil, cl), Observer: &countingObserver{closed: map[string]int{}, protocol: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	var ended atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(OnSessionEnd(r.Context(), func() { ended.Add(1) }))
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")

	// A plain GET is no upgrade: the function runs before ServeHTTP
	// returns.
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := ended.Load(); got != 1 {
		t.Fatalf("after a failed upgrade: ended = %d, want 1", got)
	}

	c := dialRaw(t, url)
	c.Connect()
	if got := ended.Load(); got != 1 {
		t.Fatalf("while the session is open: ended = %d, want 1", got)
	}
	c.Send("DISCONNECT\nreceipt:bye\n\n\x00")
	c.Expect("RECEIPT")
	c.ExpectClosed()
	poll.Until(t, 5*time.Second, func() error {
		if e, cl := ended.Load(), cl.closed.Load(); e != 2 || cl != 1 {
			return fmt.Errorf("ended = %d, closer = %d; want 2, 1", e, cl)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ended.Load(); got != 2 {
		t.Fatalf("after shutdown: ended = %d, want 2 (each session ends once)", got)
	}
}

// expiringStage gives each session a principal whose credentials expire
// after ttl; a frame with a "token" header moves the expiry by ttl.
type expiringStage struct{ ttl time.Duration }

func (e expiringStage) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	switch {
	case f.Command == stompframe.CommandConnect || f.Command == stompframe.CommandStomp:
		s.Principal = &interceptor.Principal{Name: "alice", Expires: now.Add(e.ttl)}
	case f.Get("token") != "":
		s.Principal.Expires = now.Add(e.ttl)
	}
	return interceptor.Continue()
}

func TestSessionEndsAtTokenExpiry(t *testing.T) {
	ts := startServer(t, Config{Chain: interceptor.NewChain(nil, expiringStage{ttl: 400 * time.Millisecond})})

	// Refreshed twice before expiry, the session outlives two lifetimes.
	c := dialRaw(t, ts.url)
	start := time.Now()
	c.Connect()
	for range 3 {
		time.Sleep(250 * time.Millisecond)
		c.Send("UNSUBSCRIBE\nid:refresh\ntoken:new\nreceipt:r\n\n\x00")
		c.Expect("RECEIPT")
	}
	e := c.Expect("ERROR")
	if got := e.Get("message"); got != "token expired" {
		t.Fatalf("ERROR message = %q, want token expired", got)
	}
	if lived := time.Since(start); lived < 900*time.Millisecond {
		t.Fatalf("session ended after %v, before the refreshed expiry", lived)
	}
	if code := c.ExpectClosed(); code != websocket.StatusPolicyViolation {
		t.Fatalf("close code = %v, want 1008", code)
	}
	poll.Until(t, 5*time.Second, func() error {
		if n := ts.obs.closedCount(outcome.CloseTokenExpired); n != 1 {
			return fmt.Errorf("closed %s = %d, want 1", outcome.CloseTokenExpired, n)
		}
		return nil
	})
}

func TestSessionIDsAreRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newSessionID()
		if len(id) != 24 {
			t.Fatalf("id %q has %d characters, want 24 (120 bits)", id, len(id))
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
	}
}

// TestHeartBeatZeroMeansNever checks STOMP's meaning of zero in the
// server's offer: a zero HeartBeatSend answers "0,..." in CONNECTED, and
// a negative one is an error rather than a second way to say it.
func TestHeartBeatZeroMeansNever(t *testing.T) {
	ts := startServer(t, Config{HeartBeatSend: 0, HeartBeatReceive: 7 * time.Second})
	c := dialRaw(t, ts.url)
	if got := c.Connect().Get("heart-beat"); got != "0,7000" {
		t.Fatalf("CONNECTED heart-beat %q, want 0,7000", got)
	}
	if _, err := New(Config{HeartBeatSend: -time.Second}); err == nil || !strings.Contains(err.Error(), "HeartBeatSend") {
		t.Fatalf("New with a negative HeartBeatSend: %v, want an error naming it", err)
	}
	if _, err := New(Config{OriginPatterns: []string{"ok.example", "["}}); err == nil || !strings.Contains(err.Error(), "OriginPatterns") {
		t.Fatalf("New with a bad origin pattern: %v, want an error naming OriginPatterns", err)
	}
}
