package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/internal/testredis"
)

// sendUntilRefused sends app SENDs of body with a receipt on c until one
// fails, and returns how many were RECEIPTed; the failure must be ERROR
// "backend busy".
func sendUntilRefused(t *testing.T, c *stomp.Conn, body []byte, most int) int {
	t.Helper()
	for n := range most {
		err := c.Send("/app/flood", "text/plain", body, stomp.SendOpt.Receipt)
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "backend busy") {
			t.Fatalf("app SEND %d: %v, want ERROR backend busy", n, err)
		}
		return n
	}
	t.Fatalf("%d app SENDs taken, want a refusal", most)
	return 0
}

// A flood of 60 KB app SENDs from three addresses, while no backend
// reads, stops at the byte bounds: each session ends with ERROR "backend
// busy", the refusals are counted by bound (principal, address, total),
// what waits stays within the total, and the Redis the limiter shares
// still takes writes.
func TestAppStreamFloodStopsAtByteBound(t *testing.T) {
	rs := testredis.Start(t, "--maxmemory", "48mb")
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	const total, perAddress = 6 << 20, 3 << 20
	base, _ := startApp(t, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32",
		"-app-stream-total-bytes", fmt.Sprint(total), "-app-stream-address-bytes", fmt.Sprint(perAddress))
	body := make([]byte, 60_000)
	taken := 0
	for _, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		for range 4 {
			ws, resp, err := dialHeader(t, wsURL(base), ip)
			if err != nil {
				t.Fatalf("dial from %s: %v (%s)", ip, err, describe(resp))
			}
			taken += sendUntilRefused(t, connectStomp(t, ws), body, 100)
		}
	}
	s := scrape(t, base)
	for _, bound := range []string{"principal", "address", "total"} {
		if n := s.sum("stompgate_app_backlog_refusals_total", `bound="`+bound+`"`); n < 1 {
			t.Errorf("refusals by the %s bound = %v, want at least 1", bound, n)
		}
	}
	if n := s.sum("stompgate_app_backlog_refusals_total"); n != 12 {
		t.Errorf("refusals = %v, want 12, one per session", n)
	}
	// A session is counted closed when its connection has ended, a
	// moment after the client read its ERROR.
	waitFor(t, clientTimeout, func() error {
		if n := scrape(t, base).sum("stompgate_sessions_closed_total", `reason="app_backlog"`); n != 12 {
			return fmt.Errorf("sessions closed app_backlog = %v, want 12", n)
		}
		return nil
	})
	ctx := context.Background()
	if n := rdb.XLen(ctx, appstream.DefaultStream).Val(); n != int64(taken) || taken*60_000 > total || taken*60_000 < total*3/4 {
		t.Errorf("XLEN = %d with %d RECEIPTed; want them all, within the %d-byte total and near it", n, taken, total)
	}
	if err := rdb.Set(ctx, "still-writable", "1", 0).Err(); err != nil {
		t.Errorf("SET on the limiter's Redis after the flood: %v", err)
	}
	// A client on another address is still admitted, through the
	// Redis-held handshake limit and caps, and served.
	ws, resp, err := dialHeader(t, wsURL(base), "198.51.100.7")
	if err != nil {
		t.Fatalf("honest dial: %v (%s)", err, describe(resp))
	}
	c := connectStomp(t, ws)
	sub := subscribe(t, c, "/topic/lobby")
	if err := c.Send("/topic/lobby", "text/plain", []byte("hi"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("honest SEND: %v", err)
	}
	if m := nextMessage(t, sub); string(m.Body) != "hi" {
		t.Fatalf("honest MESSAGE %q", m.Body)
	}
	disconnect(t, c)
}

// A session appending small messages while the backend does not read is
// refused at -app-stream-maxlen instead of pushing older ones out: the
// backend, reading later, gets every RECEIPTed message in order; once it
// acknowledged them, app SENDs are taken again.
func TestAppStreamNeverTrimsUnread(t *testing.T) {
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	if err := rdb.XGroupCreateMkStream(ctx, appstream.DefaultStream, "backend", "$").Err(); err != nil {
		t.Fatal(err)
	}
	base, _ := startApp(t, "-redis-url", rs.URL(), "-app-stream-maxlen", "15")
	c := dialStomp(t, wsURL(base))
	var sent []string
	for n := range 16 {
		body := fmt.Sprint("move-", n)
		err := c.Send("/app/move", "text/plain", []byte(body), stomp.SendOpt.Receipt)
		if err != nil {
			if !strings.Contains(err.Error(), "backend busy") || n != 15 {
				t.Fatalf("app SEND %d: %v, want only the 16th refused with backend busy", n, err)
			}
			break
		}
		sent = append(sent, body)
	}
	if len(sent) != 15 {
		t.Fatalf("%d RECEIPTed, want 15", len(sent))
	}
	var read []string
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "backend", Consumer: "w", Streams: []string{appstream.DefaultStream, ">"}, Block: -1}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res[0].Messages {
		m, err := appstream.Parse(e)
		if err != nil {
			t.Fatal(err)
		}
		read = append(read, string(m.Body))
		rdb.XAck(ctx, appstream.DefaultStream, "backend", e.ID)
	}
	if fmt.Sprint(read) != fmt.Sprint(sent) {
		t.Fatalf("the backend read %q, want every RECEIPTed message %q", read, sent)
	}
	c = dialStomp(t, wsURL(base))
	if err := c.Send("/app/move", "text/plain", []byte("again"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("app SEND after the backend caught up: %v", err)
	}
	disconnect(t, c)
}

// The start-up check: a Redis for the limiter, caps and bans (or for the
// app stream) that evicts keys stops start-up with a message naming the
// setting, unless -redis-allow-eviction; noeviction starts.
func TestStartupRefusesEvictingRedis(t *testing.T) {
	lru := testredis.Start(t, "--maxmemory-policy", "allkeys-lru")
	keep := testredis.Start(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // in newApp's error; empty: it starts
	}{
		{"noeviction", []string{"-redis-url", keep.URL()}, ""},
		{"allkeys-lru", []string{"-redis-url", lru.URL()}, "-redis-url (WSSERVER_REDIS_URL): redisclient: Redis " + lru.Addr + " has maxmemory-policy allkeys-lru"},
		{"app redis allkeys-lru", []string{"-redis-url", keep.URL(), "-app-redis-url", lru.URL()}, "-app-redis-url (WSSERVER_APP_REDIS_URL): redisclient: Redis " + lru.Addr + " has maxmemory-policy allkeys-lru"},
		{"opt-out", []string{"-redis-url", lru.URL(), "-app-redis-url", lru.URL(), "-redis-allow-eviction"}, ""},
		{"app redis alone", []string{"-app-redis-url", keep.URL()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st settings
			args := append([]string{"-policy", testPolicyFile(t)}, tc.args...)
			if err := st.parse(args, func(string) string { return "" }, io.Discard); err != nil {
				t.Fatal(err)
			}
			if err := st.validate(); err != nil {
				t.Fatal(err)
			}
			a, err := newApp(&st, slog.New(slog.DiscardHandler))
			if err == nil {
				a.close()
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("newApp: %v, want it to start", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "-redis-allow-eviction")):
				t.Fatalf("newApp: %v, want an error containing %q and naming -redis-allow-eviction", err, tc.want)
			}
		})
	}
}

// The app stream settings are checked at start-up, each error naming its
// setting.
func TestAppStreamSettingsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-app-stream-total-bytes", "0"}, "app-stream-total-bytes"},
		{[]string{"-app-stream-address-bytes", "-5"}, "app-stream-address-bytes"},
		{[]string{"-app-stream-principal-bytes", "1000"}, "app-stream-principal-bytes"},
	} {
		var st settings
		if err := st.parse(tc.args, func(string) string { return "" }, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := st.validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("validate %q = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
