package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
)

type countingObserver struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *countingObserver) APIRequest(endpoint string, status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[endpoint+" "+http.StatusText(status)]++
}

type fixture struct {
	srv *server.Server
	ws  string
	api string
	obs *countingObserver
	ctx context.Context
}

func start(t *testing.T) *fixture {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with change, when not nil, applied to the API's
// Config.
func startWith(t *testing.T, change func(*Config)) *fixture {
	t.Helper()
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{n: map[string]int{}}
	cfg := Config{Server: srv, Key: "s3cret", MaxBody: 16, Observer: obs, Logger: slog.New(slog.DiscardHandler)}
	if change != nil {
		change(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wsHS, apiHS := httptest.NewServer(srv), httptest.NewServer(h)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(func() {
		_ = srv.Shutdown(ctx)
		wsHS.Close()
		apiHS.Close()
		cancel()
	})
	return &fixture{srv: srv, ws: "ws" + strings.TrimPrefix(wsHS.URL, "http"), api: apiHS.URL, obs: obs, ctx: ctx}
}

func (f *fixture) client(t *testing.T) *stomp.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(f.ctx, f.ws, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := stomp.Connect(websocket.NetConn(f.ctx, ws, websocket.MessageText), stomp.ConnOpt.HeartBeat(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.MustDisconnect() })
	return conn
}

// call sends a request and decodes the JSON answer.
func (f *fixture) call(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, f.api+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer %q is not JSON: %v", b, err)
	}
	return resp.StatusCode, v
}

// manyHeaders returns the members of a JSON object of n headers.
func manyHeaders(n int) string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf(`"h%d":"v"`, i)
	}
	return strings.Join(hs, ",")
}

func TestNewValidates(t *testing.T) {
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Key: "k"}, "api: Server is nil"},
		{Config{Server: srv}, "api: Key is empty"},
		{Config{Server: srv, Key: "k", MaxBody: -1}, "api: MaxBody -1 is negative"},
		{Config{Server: srv, Key: "k", MaxHeaders: -1}, "api: MaxHeaders -1 is negative"},
		{Config{Server: srv, Key: "k", MaxPageSize: -1}, "api: MaxPageSize -1 is negative"},
	} {
		if _, err := New(tc.cfg); err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want %q matching ErrInvalidConfig", tc.cfg, err, tc.want)
		}
	}
}

func TestAuthorization(t *testing.T) {
	f := start(t)
	for _, key := range []string{"", "wrong", "s3cret2", "s3cre"} {
		code, v := f.call(t, "POST", "/api/v1/publish", key, `{"destination":"/topic/a"}`)
		if code != http.StatusUnauthorized || v["field"] != "Authorization" {
			t.Errorf("key %q: %d %v, want 401", key, code, v)
		}
	}
	if code, _ := f.call(t, "GET", "/api/v1/sessions?principal=x", "s3cret", ""); code != http.StatusOK {
		t.Fatalf("the right key: %d", code)
	}
	if n := f.obs.n["publish Unauthorized"]; n != 4 {
		t.Fatalf("counted %d unauthorized publishes, want 4", n)
	}
}

func TestPublish(t *testing.T) {
	f := start(t)
	conn := f.client(t)
	sub, err := conn.Subscribe("/topic/game.1", stomp.AckAuto)
	if err != nil {
		t.Fatal(err)
	}
	// A receipt-bearing frame after SUBSCRIBE: the subscription is in
	// place once it returns.
	if err := conn.Send("/topic/none", "", nil, stomp.SendOpt.Receipt); err != nil {
		t.Fatal(err)
	}
	code, v := f.call(t, "POST", "/api/v1/publish", "s3cret", `{"destination":"/topic/game.1","body":"state","headers":{"kind":"board"}}`)
	if code != http.StatusAccepted || v["id"] == "" || v["delivered"] != 1.0 {
		t.Fatalf("publish: %d %v", code, v)
	}
	m := <-sub.C
	if m.Err != nil || string(m.Body) != "state" || m.Header.Get("kind") != "board" || m.Header.Get("message-id") != v["id"] {
		t.Fatalf("MESSAGE %+v", m)
	}
	// go-stomp over a text NetConn reads text messages only: the base64
	// body here is UTF-8.
	code, _ = f.call(t, "POST", "/api/v1/publish", "s3cret", `{"destination":"/topic/game.1","body_base64":"aGk="}`)
	if m := <-sub.C; code != http.StatusAccepted || string(m.Body) != "hi" {
		t.Fatalf("binary publish: %d, body %q", code, m.Body)
	}
}

func TestPublishRefuses(t *testing.T) {
	f := start(t)
	for _, tc := range []struct{ body, field string }{
		{`{"destination":`, "request"},
		{`[1]`, "request"},
		{`{"body":"x"}`, "destination"},
		{`{"destination":7}`, "destination"},
		{`{"destination":"/t","extra":1}`, "extra"},
		{`{"destination":"/t","body":"0123456789abcdefX"}`, "body"},
		{`{"destination":"/t","body_base64":"` + strings.Repeat("A", 24) + `"}`, "body_base64"},
		{`{"destination":"/t","body_base64":"!"}`, "body_base64"},
		{`{"destination":"/t","body":"a","body_base64":"YQ=="}`, "body_base64"},
		{`{"destination":"/t","headers":{"":"x"}}`, "headers"},
		{`{"destination":"/t","body":"` + strings.Repeat("x", 200<<10) + `"}`, "body"},
		{`{"destination":"/t","headers":{` + manyHeaders(DefaultMaxHeaders+1) + `}}`, "headers"},
		{`{"destination":"/t","headers":{"x":"` + strings.Repeat("v", stompframe.DefaultMaxHeaderLine) + `"}}`, "headers"},
	} {
		code, v := f.call(t, "POST", "/api/v1/publish", "s3cret", tc.body)
		if code != http.StatusBadRequest || v["field"] != tc.field || v["error"] == "" {
			t.Errorf("%.60s: %d %v, want 400 naming %q", tc.body, code, v, tc.field)
		}
	}
}

func TestSessionsAndDisconnect(t *testing.T) {
	f := start(t)
	conn := f.client(t)
	principal := "anonymous-" + conn.Session()
	code, v := f.call(t, "GET", "/api/v1/sessions?principal="+principal, "s3cret", "")
	ss, _ := v["sessions"].([]any)
	if code != http.StatusOK || len(ss) != 1 {
		t.Fatalf("sessions: %d %v", code, v)
	}
	s := ss[0].(map[string]any)
	if s["id"] != conn.Session() || s["remote_address"] != "127.0.0.1" || s["connected_since"] == "" || s["received"] != 1.0 {
		t.Fatalf("session %v", s)
	}
	if code, v := f.call(t, "POST", "/api/v1/disconnect", "s3cret", `{}`); code != http.StatusBadRequest || v["field"] != "principal" {
		t.Fatalf("empty disconnect: %d %v", code, v)
	}
	code, v = f.call(t, "POST", "/api/v1/disconnect", "s3cret", `{"session":"`+conn.Session()+`","reason":"kicked"}`)
	if code != http.StatusOK || v["disconnected"] != 1.0 {
		t.Fatalf("disconnect: %d %v", code, v)
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := f.srv.Sessions(); n != 0 {
			return fmt.Errorf("%d sessions still open", n)
		}
		return nil
	})
}

// othersFunc is an Others from a function.
type othersFunc func(principal, session, reason string) error

func (f othersFunc) Disconnect(_ context.Context, p, s, r string) error { return f(p, s, r) }

// Disconnect asks the other instances too, and says so when they cannot
// be reached.
func TestDisconnectOthers(t *testing.T) {
	srv, err := server.New(server.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	fail := false
	others := othersFunc(func(p, s, r string) error {
		asked = append(asked, p+"|"+s+"|"+r)
		if fail {
			return errors.New("redis down")
		}
		return nil
	})
	h, err := New(Config{Server: srv, Key: "k", Others: others, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fail bool
		code int
	}{{false, http.StatusOK}, {true, http.StatusInternalServerError}} {
		fail = tc.fail
		req := httptest.NewRequest("POST", "/api/v1/disconnect", strings.NewReader(`{"principal":"bob","reason":"bye"}`))
		req.Header.Set("Authorization", "Bearer k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var v map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &v)
		if rec.Code != tc.code || v["disconnected"] != 0.0 {
			t.Errorf("others failing %v: %d %v", tc.fail, rec.Code, v)
		}
	}
	if len(asked) != 2 || asked[0] != "bob||bye" {
		t.Fatalf("others asked %q", asked)
	}
}
