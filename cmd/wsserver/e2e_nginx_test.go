package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/nginx"
)

// handshakeBurst is how many handshakes the policy (default or test) lets one IP
// make at once: burst 5 plus the one the rate allows from rest.
const handshakeBurst = 6

// TestThroughNginx puts a real nginx, with the configuration rendered from
// the test policy (testPolicy), in front of the wired server. From one IP, the first
// handshakeBurst rapid WebSocket handshakes pass and carry STOMP; the next
// one gets nginx's 429 with Retry-After and never reaches the server.
// Then, against a fresh server with no nginx in front, the same sequence
// gets the server's own 429 at the same point: one policy, the same
// numbers in both places.
func TestThroughNginx(t *testing.T) {
	t.Run("nginx", func(t *testing.T) {
		base, _ := startApp(t)
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		conf, err := nginx.Render(parsedTestPolicy(t), nginx.Config{
			Listen:       fmt.Sprintf("127.0.0.1:%d", testnginx.FreePort(t)),
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
		ngx := testnginx.Start(t, conf)

		resp := handshakeSequence(t, wsURL(ngx.URL))
		if got := resp.Header.Get("Retry-After"); got != "2" {
			t.Errorf("nginx's 429: got Retry-After %q, want \"2\" (one request per 2 s at 30r/m)", got)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != "" {
			t.Errorf("nginx's 429: got RateLimit-Policy %q, want none: the server must not have answered", got)
		}
		if body := readBody(resp); !strings.Contains(body, `"too_many_requests"`) {
			t.Errorf("nginx's 429: got body %q, want nginx's JSON answer", body)
		}

		// The server saw only the accepted handshakes.
		m := scrape(t, base)
		if got := m[`stompgate_handshakes_total{result="accepted"}`]; got != handshakeBurst {
			t.Errorf("handshakes accepted by the server: got %v, want %d", got, handshakeBurst)
		}
		if got := m[`stompgate_handshakes_total{result="rejected_limit"}`]; got != 0 {
			t.Errorf("handshakes refused by the server: got %v, want 0 (nginx refuses first)", got)
		}
	})

	t.Run("server alone", func(t *testing.T) {
		base, _ := startApp(t)
		resp := handshakeSequence(t, wsURL(base))
		if got := resp.Header.Get("Retry-After"); got == "" || got == "0" {
			t.Errorf("server's 429: got Retry-After %q, want whole seconds, at least 1", got)
		}
		// ws_handshake 3r/s burst 5: q = burst + 1, w = ceil(6 / 3r/s).
		if got, want := resp.Header.Get("RateLimit-Policy"), `"ws_handshake";q=6;w=12`; got != want {
			t.Errorf("server's 429: got RateLimit-Policy %q, want %q", got, want)
		}
		m := scrape(t, base)
		if got := m[`stompgate_handshakes_total{result="accepted"}`]; got != handshakeBurst {
			t.Errorf("handshakes accepted: got %v, want %d", got, handshakeBurst)
		}
		if got := m[`stompgate_handshakes_total{result="rejected_limit"}`]; got != 1 {
			t.Errorf("handshakes refused: got %v, want 1", got)
		}
	})
}

// handshakeSequence makes handshakeBurst+1 WebSocket handshakes to url in
// quick succession. The first handshakeBurst must succeed; then each of
// those sessions must CONNECT, and the first one carries a message from
// SUBSCRIBE through SEND to MESSAGE. The last handshake must get 429,
// whose response is returned (with up to 1 KiB of its body).
func handshakeSequence(t *testing.T, url string) *http.Response {
	t.Helper()
	// Handshakes first, all of them, so that the sequence stays far inside
	// the 1/3 s in which the rate earns a handshake back; STOMP after.
	var open []*stompOver
	for i := range handshakeBurst {
		ws, resp, err := dialWS(t, url)
		if err != nil {
			t.Fatalf("handshake %d of %d: %v (%s)", i+1, handshakeBurst, err, describe(resp))
		}
		open = append(open, &stompOver{ws: ws})
	}
	_, refused, err := dialWS(t, url)
	if err == nil {
		t.Fatalf("handshake %d: accepted, want 429", handshakeBurst+1)
	}
	if refused == nil || refused.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake %d: got %v (%s), want 429 Too Many Requests", handshakeBurst+1, err, describe(refused))
	}

	for i, s := range open {
		s.c = connectStomp(t, s.ws)
		if v := s.c.Version(); v != stomp.V12 {
			t.Errorf("session %d: got STOMP version %v, want 1.2", i+1, v)
		}
	}
	c := open[0].c
	sub := subscribe(t, c, "/topic/e2e.nginx")
	if err := open[1].c.Send("/topic/e2e.nginx", "text/plain", []byte("through"), stomp.SendOpt.Header("x-e2e", "nginx"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND: %v", err)
	}
	m := nextMessage(t, sub)
	if string(m.Body) != "through" || m.Header.Get("x-e2e") != "nginx" {
		t.Errorf("MESSAGE: got body %q header x-e2e %q, want \"through\" and \"nginx\"", m.Body, m.Header.Get("x-e2e"))
	}
	for _, s := range open {
		disconnect(t, s.c)
	}
	return refused
}

// stompOver is a STOMP client on a WebSocket opened before it.
type stompOver struct {
	ws *websocket.Conn
	c  *stomp.Conn
}

// readBody returns the body kept in a refused handshake's response.
func readBody(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
