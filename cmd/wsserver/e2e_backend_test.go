package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/relay"
)

// apiCall sends one server API request to the admin listener of the
// server at base and decodes the JSON answer.
func apiCall(t *testing.T, base, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, adminBase(t, base)+path, strings.NewReader(body))
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
	_ = json.Unmarshal(b, &v)
	return resp.StatusCode, v
}

// TestBackendSeams runs two wsservers on one real Redis with the relay:
// the server API of one instance publishes to a user destination whose
// session is on the other, a client's app SEND lands in the app stream
// before its RECEIPT, the API lists the session, and the other instance's
// API ends it.
func TestBackendSeams(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	c := startInstances(t, 2, rs.URL(), "-api-key", "k3y", "-app-stream", "game:in")
	ctx := context.Background()
	if err := rdb.XGroupCreateMkStream(ctx, "game:in", "backend", "$").Err(); err != nil {
		t.Fatal(err)
	}

	// A player on instance B, reached from instance A's API.
	player := dialStomp(t, wsURL(c.bases[1]))
	principal := "anonymous-" + player.Session()
	inbox := subscribe(t, player, "/user/queue/private")
	internal := "/user/" + principal + "/queue/private"
	c.waitRelaySubscribed(t, rdb, internal, false)
	code, v := apiCall(t, c.bases[0], "k3y", "POST", "/api/v1/publish",
		fmt.Sprintf(`{"destination":%q,"body":"your hand","headers":{"kind":"deal"}}`, internal))
	if code != http.StatusAccepted || v["id"] == "" {
		t.Fatalf("publish: %d %v", code, v)
	}
	m := nextMessage(t, inbox)
	if m.Destination != "/user/queue/private" || string(m.Body) != "your hand" || m.Header.Get("kind") != "deal" {
		t.Fatalf("MESSAGE %s %q %v", m.Destination, m.Body, m.Header)
	}

	// The player's move: in the stream when its RECEIPT is in.
	if err := player.Send("/app/move", "text/plain", []byte("e2e4"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("app SEND: %v", err)
	}
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "w", Streams: []string{"game:in", ">"}, Block: -1}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("XREADGROUP after the RECEIPT: %+v, %v", res, err)
	}
	move, err := appstream.Parse(res[0].Messages[0])
	if err != nil || move.Principal != principal || move.Session != player.Session() || string(move.Body) != "e2e4" || move.Destination != "/app/move" {
		t.Fatalf("stream entry %+v, %v", move, err)
	}

	// Wrong key, then the session list and a disconnect.
	if code, _ := apiCall(t, c.bases[1], "nope", "GET", "/api/v1/sessions?principal="+principal, ""); code != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d", code)
	}
	code, v = apiCall(t, c.bases[1], "k3y", "GET", "/api/v1/sessions?principal="+principal, "")
	if ss, _ := v["sessions"].([]any); code != http.StatusOK || len(ss) != 1 || ss[0].(map[string]any)["id"] != player.Session() {
		t.Fatalf("sessions: %d %v", code, v)
	}
	// Instance A's API ends the player's session on B: A has none
	// itself, B hears the request on Redis.
	waitFor(t, clientTimeout, func() error {
		n, err := rdb.PubSubNumSub(ctx, relay.DisconnectChannel).Result()
		if err != nil || n[relay.DisconnectChannel] != 2 {
			return fmt.Errorf("%s has %v subscribers, want both instances (%v)", relay.DisconnectChannel, n, err)
		}
		return nil
	})
	code, v = apiCall(t, c.bases[0], "k3y", "POST", "/api/v1/disconnect", fmt.Sprintf(`{"principal":%q,"reason":"table closed"}`, principal))
	if code != http.StatusOK || v["disconnected"] != 0.0 {
		t.Fatalf("disconnect: %d %v", code, v)
	}
	waitFor(t, clientTimeout, func() error {
		if n := c.apps[1].stomp.Sessions(); n != 0 {
			return fmt.Errorf("%d sessions open", n)
		}
		return nil
	})

	a, b := scrape(t, c.bases[0]), scrape(t, c.bases[1])
	for _, chk := range []struct {
		got  float64
		want float64
		what string
	}{
		{a.sum("stompgate_api_requests_total", `endpoint="publish"`, `code="202"`), 1, "A publish 202"},
		{b.sum("stompgate_api_requests_total", `code="401"`), 1, "B 401"},
		{b.sum("stompgate_app_messages_total", `result="ok"`), 1, "B app ok"},
		{b.sum("stompgate_user_deliveries_total"), 1, "B user deliveries"},
		{b.sum("stompgate_sessions_closed_total", `reason="disconnected"`), 1, "B closed disconnected"},
	} {
		if chk.got != chk.want {
			t.Errorf("%s = %v, want %v", chk.what, chk.got, chk.want)
		}
	}
}

// Without -redis-url there is no backend: an app SEND gets ERROR "no
// backend configured"; without -api-key there is no API.
func TestNoBackendConfigured(t *testing.T) {
	base, _ := startApp(t)
	conn := dialStomp(t, wsURL(base))
	err := conn.Send("/app/move", "text/plain", []byte("x"), stomp.SendOpt.Receipt)
	if err == nil || !strings.Contains(err.Error(), "no backend configured") {
		t.Fatalf("app SEND without a backend: %v", err)
	}
	if code, _ := apiCall(t, base, "", "POST", "/api/v1/publish", `{}`); code != http.StatusNotFound {
		t.Fatalf("API without -api-key: %d, want 404", code)
	}
	waitFor(t, clientTimeout, func() error {
		if n := scrape(t, base).sum("stompgate_app_messages_total", `result="no_backend"`); n != 1 {
			return errors.New("no_backend not counted")
		}
		return nil
	})
}
