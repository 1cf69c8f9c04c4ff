package stomptest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/server"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startServer serves a stompgate server with the default settings and
// returns its WebSocket URL; it is shut down when the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		hs.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
}

// A message sent right after Subscribe returns reaches the subscriber:
// the subscription was in place.
func TestSubscribeNext(t *testing.T) {
	url := startServer(t)
	sub := Subscribe(t, Dial(t, url), "/topic/room")
	pub := Dial(t, url)
	for _, body := range []string{"one", "two"} {
		if err := pub.Send("/topic/room", "text/plain", []byte(body)); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	for _, want := range []string{"one", "two"} {
		if got := string(Next(t, sub).Body); got != want {
			t.Errorf("got body %q, want %q", got, want)
		}
	}
}

func TestDialWebSocketRefused(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "go away", http.StatusForbidden)
	}))
	defer hs.Close()
	ws, resp, err := DialWebSocket(t, "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err == nil {
		_ = ws.CloseNow()
		t.Fatal("got a connection, want the handshake refused")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("got response %v, want 403", resp)
	}
	got := Describe(resp)
	for _, want := range []string{"HTTP 403", `"go away"`} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe = %q, want it to contain %s", got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		resp *http.Response
		want string
	}{
		{"none", nil, "no response"},
		{"no body", &http.Response{StatusCode: 429, Header: http.Header{}}, `HTTP 429 map[] ""`},
		{"body", &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(" bad \n"))}, `HTTP 400 map[] "bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(tt.resp); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
