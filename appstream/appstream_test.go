package appstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
)

func newClient(t *testing.T, rs *testredis.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestNewValidates(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no client", Config{}, "appstream: Client is nil"},
		{"negative", Config{Client: c, MaxLen: -1}, "appstream: MaxLen -1 is negative"},
		{"principal", Config{Client: c, MaxPrincipalBytes: -2}, "appstream: MaxPrincipalBytes -2 is negative"},
		{"address", Config{Client: c, MaxAddressBytes: -3}, "appstream: MaxAddressBytes -3 is negative"},
		{"total", Config{Client: c, MaxTotalBytes: -4}, "appstream: MaxTotalBytes -4 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New: %v, want %q matching ErrInvalidConfig", err, tc.want)
			}
		})
	}
	h, err := New(Config{Client: c})
	if err != nil || h.cfg.Stream != DefaultStream || h.cfg.MaxLen != DefaultMaxLen ||
		h.cfg.MaxPrincipalBytes != DefaultMaxPrincipalBytes || h.cfg.MaxAddressBytes != DefaultMaxAddressBytes ||
		h.cfg.MaxTotalBytes != DefaultMaxTotalBytes {
		t.Fatalf("defaults: %+v, %v", h.cfg, err)
	}
}

// A consumer group reads what the handler appended, in order, with every
// field, and acknowledges it; a second group member then finds nothing
// left.
func TestConsumerGroupReadsAndAcks(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx := context.Background()
	h, err := New(Config{Client: c, Stream: "game:in", Instance: "ws-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.XGroupCreateMkStream(ctx, "game:in", "backend", "$").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		err := h.HandleApp(ctx, server.AppMessage{
			ID: fmt.Sprint("m", i), Destination: "/app/move", Principal: "alice", Session: "s1",
			Headers: []stompframe.Header{{Name: "room", Value: "7"}},
			Body:    []byte{'x', byte('0' + i), 0xff},
		})
		if err != nil {
			t.Fatalf("HandleApp: %v", err)
		}
	}
	res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "w1", Streams: []string{"game:in", ">"}, Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Messages) != 3 {
		t.Fatalf("XREADGROUP returned %+v", res)
	}
	for i, e := range res[0].Messages {
		m, err := Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		want := Message{StreamID: e.ID, Destination: "/app/move", Principal: "alice", Session: "s1", Instance: "ws-1",
			ID: fmt.Sprint("m", i), Headers: map[string]string{"room": "7"}}
		body := m.Body
		m.Body = nil
		if fmt.Sprint(m) != fmt.Sprint(want) || string(body) != string([]byte{'x', byte('0' + i), 0xff}) {
			t.Fatalf("entry %d = %+v %q", i, m, body)
		}
		if err := c.XAck(ctx, "game:in", "backend", e.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	pending, err := c.XPending(ctx, "game:in", "backend").Result()
	if err != nil || pending.Count != 0 {
		t.Fatalf("XPENDING = %+v, %v; want nothing pending", pending, err)
	}
	res, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "w2", Streams: []string{"game:in", ">"}, Block: -1}).Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("second worker read %+v, %v; want nothing", res, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    redis.XMessage
		want string
	}{
		{"no destination", redis.XMessage{ID: "1-0", Values: map[string]any{"body": "x"}}, "appstream: entry 1-0 has no destination"},
		{"bad headers", redis.XMessage{ID: "1-1", Values: map[string]any{"destination": "/app/x", "headers": "[1]"}}, "appstream: entry 1-1: headers:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.e)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want %q", err, tc.want)
			}
		})
	}
}

// Through a server: a client's app SEND is in the stream when its
// RECEIPT arrives; with Redis gone, the client gets ERROR "backend
// unavailable".
func TestServerAppendsBeforeReceipt(t *testing.T) {
	rs := testredis.Start(t)
	c := newClient(t, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{AppHandler: h, AppTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer func() {
		_ = srv.Shutdown(ctx)
		hs.Close()
	}()
	dial := func() *stomp.Conn {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := stomp.Connect(websocket.NetConn(ctx, ws, websocket.MessageText), stomp.ConnOpt.HeartBeat(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	conn := dial()
	if err := conn.Send("/app/move", "text/plain", []byte("e4"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("Send: %v", err)
	}
	entries, err := c.XRange(ctx, DefaultStream, "-", "+").Result()
	if err != nil || len(entries) != 1 {
		t.Fatalf("XRANGE after the RECEIPT = %+v, %v", entries, err)
	}
	if m, err := Parse(entries[0]); err != nil || m.Session != conn.Session() || string(m.Body) != "e4" {
		t.Fatalf("entry %+v, %v", m, err)
	}
	_ = conn.Disconnect()

	rs.Kill()
	conn = dial()
	err = conn.Send("/app/move", "text/plain", []byte("e5"), stomp.SendOpt.Receipt)
	if err == nil || !strings.Contains(err.Error(), "backend unavailable") {
		t.Fatalf("Send with Redis gone: %v, want ERROR backend unavailable", err)
	}
	_ = conn.MustDisconnect()
}

// A header repeated in the SEND reaches the backend with its first
// value, the one STOMP 1.2 says counts.
func TestRepeatedHeaderFirstWins(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{}) // never dialled: args only builds the command
	t.Cleanup(func() { c.Close() })
	h, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	values := h.fields(server.AppMessage{Destination: "/app/x", Headers: []stompframe.Header{
		{Name: "room", Value: "7"}, {Name: "k", Value: "v"}, {Name: "room", Value: "8"},
	}})
	var headers []byte
	for i := 0; i+1 < len(values); i += 2 {
		if values[i] == "headers" {
			headers = values[i+1].([]byte)
		}
	}
	if got, want := string(headers), `{"k":"v","room":"7"}`; got != want {
		t.Errorf("headers field = %s, want %s", got, want)
	}
}
