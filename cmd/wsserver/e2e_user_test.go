package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// userPolicy lets the handshakes of TestForgedUserMessages through: the
// test is about what a session may send, not how often it connects.
const userPolicy = `zones:
  - name: ws_handshake
    rate: 100r/s
    burst: 50
    routes:
      - {method: GET, path: /ws, upstream: ws}
`

// stompToken returns an HS256 token for sub, valid for an hour, with
// stomp claims when claims is not nil.
func stompToken(t *testing.T, sub string, claims map[string]any) string {
	t.Helper()
	c := jwt.MapClaims{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()}
	if claims != nil {
		c["stomp"] = claims
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(e2eSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForgedUserMessages: a client SEND to another principal's user
// destination, made to look like the backend's, is refused with ERROR
// and a close unless the sender's token names a "/user/" pattern; the
// target receives nothing but the backend's messages, and a message a
// permitted client sends carries the server's sender header however the
// client tried to forge it.
func TestForgedUserMessages(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte(userPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startApp(t, "-policy", pol, "-jwt-secret", e2eSecret, "-api-key", "k3y")
	alice := rawClient(t, base, stompToken(t, "alice", nil))
	alice.Send("SUBSCRIBE\nid:inbox\ndestination:/user/queue/inbox\nreceipt:sub\n\n\x00")
	if f := alice.Read(); f.Command != "RECEIPT" {
		t.Fatalf("alice SUBSCRIBE: %s %v", f.Command, f.Headers)
	}
	forged := "SEND\ndestination:/user/alice/queue/inbox\nsender:backend\ncontent-type:application/json\nreceipt:forged\n\n" +
		`{"from":"backend","type":"you-won"}` + "\x00"

	attackers := []struct {
		name, token string
	}{
		{"anonymous", ""},
		{"no stomp claims", stompToken(t, "mallory", nil)},
		{"subscribe claims only", stompToken(t, "mallory", map[string]any{"subscribe": []string{"/topic/**"}})},
		{"send to every destination", stompToken(t, "mallory", map[string]any{"send": []string{"/**"}})},
		{"send to any run", stompToken(t, "mallory", map[string]any{"send": []string{"**"}})},
	}
	for _, a := range attackers {
		t.Run(a.name, func(t *testing.T) {
			c := rawClient(t, base, a.token)
			c.Send(forged)
			f := c.Read()
			if f.Command != "ERROR" || f.Get("message") != "permission denied" || f.Get("receipt-id") != "forged" {
				t.Fatalf("forged SEND: got %s %v %q, want ERROR permission denied", f.Command, f.Headers, f.Body)
			}
			expectClosed(t, c)
		})
	}

	// What alice reads next is the backend's message, with no sender.
	if code, v := apiCall(t, base, "k3y", "POST", "/api/v1/publish",
		`{"destination":"/user/alice/queue/inbox","body":"{\"from\":\"backend\",\"type\":\"state\"}"}`); code != http.StatusAccepted {
		t.Fatalf("publish: %d %v", code, v)
	}
	m := alice.Read()
	if m.Command != "MESSAGE" || string(m.Body) != `{"from":"backend","type":"state"}` {
		t.Fatalf("alice got %s %v %q, want the backend's MESSAGE", m.Command, m.Headers, m.Body)
	}
	if s, ok := m.Lookup("sender"); ok {
		t.Fatalf("the backend's MESSAGE carries sender %q", s)
	}

	// A principal allowed to write to inboxes is named by the server.
	carol := rawClient(t, base, stompToken(t, "carol", map[string]any{"send": []string{"/user/*/queue/inbox"}}))
	carol.Send(forged)
	if f := carol.Read(); f.Command != "RECEIPT" {
		t.Fatalf("carol's SEND: got %s %v %q, want RECEIPT", f.Command, f.Headers, f.Body)
	}
	m = alice.Read()
	if m.Command != "MESSAGE" || m.Get("sender") != "carol" || m.Get("destination") != "/user/queue/inbox" {
		t.Fatalf("alice got %s %v, want a MESSAGE with sender carol", m.Command, m.Headers)
	}
	for _, h := range m.Headers {
		if h.Name == "sender" && h.Value != "carol" {
			t.Fatalf("MESSAGE carries a second sender %q", h.Value)
		}
	}

	waitFor(t, clientTimeout, func() error {
		if got := scrape(t, base)[`stompgate_protocol_error_closes_total{kind="permission"}`]; got != float64(len(attackers)) {
			return fmt.Errorf("permission closes: %v, want %d", got, len(attackers))
		}
		return nil
	})
}
