package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testnginx"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/nginx"
)

// scaleOutInstances is the number of wsserver instances of the scale-out
// tests.
const scaleOutInstances = 3

// cluster is several wired wsservers sharing one Redis, with -relay redis.
type cluster struct {
	bases []string // "http://127.0.0.1:port" of each instance
	apps  []*app
}

// startInstances starts n wsservers on their own loopback ports, all on
// the Redis at redisURL with the relay on.
func startInstances(t *testing.T, n int, redisURL string, extra ...string) cluster {
	t.Helper()
	var c cluster
	for range n {
		base, a := startApp(t, append([]string{"-redis-url", redisURL, "-relay", "redis"}, extra...)...)
		if a.relay == nil {
			t.Fatal("-relay redis: app has no relay")
		}
		c.bases = append(c.bases, base)
		c.apps = append(c.apps, a)
	}
	return c
}

// hosts returns the instances' host:port, for the nginx upstream.
func (c cluster) hosts(t *testing.T) []string {
	t.Helper()
	var hs []string
	for _, b := range c.bases {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, u.Host)
	}
	return hs
}

// waitRelaySubscribed waits until Redis counts, on dest's channel, one
// subscriber per instance whose relay subscribed to it: from then on a
// message published anywhere reaches every local subscriber.
func (c cluster) waitRelaySubscribed(t *testing.T, rdb redis.UniversalClient, dest string, sharded bool) {
	t.Helper()
	ch := c.apps[0].relay.Channel(dest)
	waitFor(t, clientTimeout, func() error {
		want := 0
		for i, b := range c.bases {
			if scrape(t, b)["stompgate_relay_subscriptions"] > 0 && c.apps[i].stomp.Sessions() > 0 {
				want++
			}
		}
		var n map[string]int64
		var err error
		if sharded {
			n, err = shardNumSub(rdb, ch)
		} else {
			n, err = rdb.PubSubNumSub(context.Background(), ch).Result()
		}
		if err != nil {
			return err
		}
		if want == 0 || n[ch] != int64(want) {
			return fmt.Errorf("channel %s has %d subscribers in Redis, want %d (instances with a local subscriber)", ch, n[ch], want)
		}
		return nil
	})
}

// newNginx starts a real nginx rendered from the default policy with every
// instance in the WebSocket upstream.
func newNginx(t *testing.T, hosts []string) *testnginx.Server {
	t.Helper()
	conf, err := nginx.Render(parsedTestPolicy(t), nginx.Config{
		Listen:       fmt.Sprintf("127.0.0.1:%d", testnginx.FreePort(t)),
		WSUpstreams:  hosts,
		APIUpstreams: hosts[:1],
		PIDFile:      "nginx.pid",
		ErrorLog:     "error.log",
		AccessLog:    "access.log",
		TempPath:     ".",
	})
	if err != nil {
		t.Fatalf("nginx.Render: %v", err)
	}
	return testnginx.Start(t, conf)
}

// TestScaleOutRelay runs three wsservers on one real Redis behind a real
// nginx. A subscriber on instance A and one through nginx (on whichever
// instance nginx picks) receive the messages that publishers on B and C
// send, each exactly once and in each publisher's order.
func TestScaleOutRelay(t *testing.T) {
	rs := testredis.Start(t)
	// The publishers send faster than the default per-session limit.
	c := startInstances(t, scaleOutInstances, rs.URL(), "-send-limit", "1000")
	ngx := newNginx(t, c.hosts(t))
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })

	const dest = "/topic/room.scaleout"
	const perPublisher = 50
	subs := map[string]*stomp.Subscription{
		"on a":          subscribe(t, dialStomp(t, wsURL(c.bases[0])), dest),
		"through nginx": subscribe(t, dialStomp(t, wsURL(ngx.URL)), dest),
	}
	c.waitRelaySubscribed(t, rdb, dest, false)

	for i, name := range []string{"b", "c"} {
		pub := dialStomp(t, wsURL(c.bases[i+1]))
		for seq := range perPublisher {
			opts := []func(*frame.Frame) error{
				stomp.SendOpt.Header("x-pub", name),
				stomp.SendOpt.Header("x-seq", strconv.Itoa(seq)),
			}
			if seq == perPublisher-1 {
				opts = append(opts, stomp.SendOpt.Receipt)
			}
			if err := pub.Send(dest, "text/plain", []byte(name+strconv.Itoa(seq)), opts...); err != nil {
				t.Fatalf("%s: SEND %d: %v", name, seq, err)
			}
		}
	}
	for who, sub := range subs {
		next := map[string]int{}
		ids := map[string]bool{}
		for range 2 * perPublisher {
			m := nextMessage(t, sub)
			id := m.Header.Get("message-id")
			if ids[id] {
				t.Errorf("subscriber %s: message-id %s delivered twice", who, id)
			}
			ids[id] = true
			p := m.Header.Get("x-pub")
			if got, want := m.Header.Get("x-seq"), strconv.Itoa(next[p]); got != want {
				t.Errorf("subscriber %s: from %s got x-seq %s, want %s", who, p, got, want)
			}
			next[p]++
		}
		if next["b"] != perPublisher || next["c"] != perPublisher {
			t.Errorf("subscriber %s: got %d from b and %d from c, want %d each", who, next["b"], next["c"], perPublisher)
		}
	}
	m := scrape(t, c.bases[0])
	if got := m[`stompgate_relay_messages_total{direction="in"}`]; got < 2*perPublisher {
		t.Errorf("instance a: relayed in %v, want at least %d", got, 2*perPublisher)
	}
	if got := m.sum("stompgate_relay_dropped_total"); got != 0 {
		t.Errorf("instance a: relay dropped %v, want 0", got)
	}
}

// TestScaleOutHandshakeLimit shows that the per-IP handshake limit is one
// limit across the instances: they keep its state in the shared Redis.
// From one client IP, handshakeBurst immediate handshakes pass in total,
// spread round-robin over the three instances, and the next one gets 429
// from whichever instance it reaches. Through nginx in front of the three
// the same sequence ends in 429 at the same point.
func TestScaleOutHandshakeLimit(t *testing.T) {
	t.Run("direct round-robin", func(t *testing.T) {
		rs := testredis.Start(t)
		c := startInstances(t, scaleOutInstances, rs.URL())
		for i := range handshakeBurst {
			target := c.bases[i%len(c.bases)]
			if _, resp, err := dialWS(t, wsURL(target)); err != nil {
				t.Fatalf("handshake %d (instance %d): %v (%s)", i+1, i%len(c.bases), err, describe(resp))
			}
		}
		// Every instance refuses now, not only the one whose turn it is.
		for i, base := range c.bases {
			_, resp, err := dialWS(t, wsURL(base))
			if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("handshake %d on instance %d: got %v (%s), want 429", handshakeBurst+1+i, i, err, describe(resp))
			}
		}
		accepted, refused := 0.0, 0.0
		for _, base := range c.bases {
			m := scrape(t, base)
			accepted += m[`stompgate_handshakes_total{result="accepted"}`]
			refused += m[`stompgate_handshakes_total{result="rejected_limit"}`]
			if got := m["stompgate_handshake_limiter_fallback"]; got != 0 {
				t.Errorf("%s: limiter on its fallback store: the decisions were not Redis'", base)
			}
		}
		if accepted != handshakeBurst || refused != scaleOutInstances {
			t.Errorf("over all instances: accepted %v, refused %v, want %d and %d", accepted, refused, handshakeBurst, scaleOutInstances)
		}
	})

	t.Run("through nginx", func(t *testing.T) {
		rs := testredis.Start(t)
		c := startInstances(t, scaleOutInstances, rs.URL())
		ngx := newNginx(t, c.hosts(t))
		for i := range handshakeBurst {
			if _, resp, err := dialWS(t, wsURL(ngx.URL)); err != nil {
				t.Fatalf("handshake %d through nginx: %v (%s)", i+1, err, describe(resp))
			}
		}
		_, resp, err := dialWS(t, wsURL(ngx.URL))
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("handshake %d through nginx: got %v (%s), want 429", handshakeBurst+1, err, describe(resp))
		}
		// The instances behind nginx counted the same handshakes in the
		// shared Redis: a client reaching an instance directly is held to
		// the limit too.
		_, resp, err = dialWS(t, wsURL(c.bases[2]))
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("handshake directly after the nginx ones: got %v (%s), want 429", err, describe(resp))
		}
		accepted := 0.0
		for _, base := range c.bases {
			accepted += scrape(t, base)[`stompgate_handshakes_total{result="accepted"}`]
		}
		if accepted != handshakeBurst {
			t.Errorf("handshakes the instances accepted: got %v, want %d", accepted, handshakeBurst)
		}
	})
}

// -relay takes "redis" or nothing, and needs -redis-url.
func TestRelaySettingErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown relay", []string{"-relay", "nats"}, `-relay "nats": want redis or empty`},
		{"relay without redis", []string{"-relay", "redis"}, "-relay redis needs -redis-url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st settings
			if err := st.parse(tt.args, func(string) string { return "" }, io.Discard); err != nil {
				t.Fatalf("parse %q: %v", tt.args, err)
			}
			a, err := newApp(&st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				a.close()
				t.Fatalf("newApp %q: no error, want %q", tt.args, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("newApp %q: got error %q, want it to contain %q", tt.args, err, tt.want)
			}
		})
	}
	// From the environment, as every setting.
	var st settings
	env := map[string]string{"WSSERVER_RELAY": "redis"}
	if err := st.parse(nil, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if st.relay != "redis" {
		t.Errorf("WSSERVER_RELAY=redis: got -relay %q, want redis", st.relay)
	}
}
