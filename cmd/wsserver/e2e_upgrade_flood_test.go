package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
)

// The upgrade flood: one address on many keep-alive connections sends
// WebSocket upgrade requests back to back, each refused 429 and each a
// limiter decision, while honest clients on other addresses connect.
const (
	floodConns    = 300
	floodDuration = 4 * time.Second
	// honestEvery paces the honest handshakes, each from an address of
	// its own: 25 a second.
	honestEvery = 40 * time.Millisecond
	// The test policy's handshake zone: 30r/m, burst 5.
	floodRatePerSec = 0.5
	floodBurst      = 5
	// floodMaxConns is the handshake zone's max_connections in the flood
	// test, so that every admitted handshake also takes a session cap
	// slot in the same Redis.
	floodMaxConns = 20
)

// floodPolicy is testPolicy with the session cap on the handshake zone.
func floodPolicy(t *testing.T) string {
	t.Helper()
	const zone = "    burst: 5\n    routes:\n      - {method: GET, path: /ws"
	if !strings.Contains(testPolicy, zone) {
		t.Fatal("testPolicy's handshake zone changed; update floodPolicy")
	}
	return writePolicy(t, strings.Replace(testPolicy, zone,
		fmt.Sprintf("    burst: 5\n    max_connections: %d\n    routes:\n      - {method: GET, path: /ws", floodMaxConns), 1))
}

// TestUpgradeFloodOneAddress: with a real Redis and either -limiter-fail,
// one address flooding upgrade requests neither flips the limiter nor the
// session caps (max_connections on the same zone, in the same Redis) into
// fallback, nor crowds out others: honest clients on other addresses keep
// at least 99 % of their handshakes, the flooding address is admitted no
// more than its limit, burst+1 + rate × t, and the shedding that kept the
// flood out of the Redis queue is counted.
func TestUpgradeFloodOneAddress(t *testing.T) {
	rs := testredis.Start(t)
	for i, mode := range []string{"open", "closed"} {
		t.Run("fail-"+mode, func(t *testing.T) {
			base, _ := startApp(t, "-redis-url", rs.URL(), "-trusted-proxies", "127.0.0.1/32", "-limiter-fail", mode,
				"-policy", floodPolicy(t))
			flooder := fmt.Sprintf("203.0.113.%d", 100+i)
			ctx, cancel := context.WithTimeout(t.Context(), floodDuration)
			defer cancel()

			start := time.Now()
			var admitted, refused, floodErrs atomic.Int64
			var wg sync.WaitGroup
			for range floodConns {
				wg.Go(func() { floodUpgrades(ctx, base, flooder, &admitted, &refused, &floodErrs) })
			}
			var honestOK, honestTried int
			var failures []string
			tick := time.NewTicker(honestEvery)
			for n := 0; ctx.Err() == nil; n++ {
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
				honestTried++
				ip := fmt.Sprintf("198.51.%d.%d", 100+i*20+n/250, 1+n%250)
				if err := honestHandshake(base, ip); err != nil {
					if len(failures) < 5 {
						failures = append(failures, err.Error())
					}
					continue
				}
				honestOK++
			}
			tick.Stop()
			wg.Wait()
			elapsed := time.Since(start)

			limit := floodBurst + 1 + int64(floodRatePerSec*elapsed.Seconds())
			t.Logf("fail %s: flood %v on %d connections: %d refused, %d admitted (limit %d), %d errors; honest %d of %d",
				mode, elapsed.Round(time.Millisecond), floodConns, refused.Load(), admitted.Load(), limit, floodErrs.Load(), honestOK, honestTried)
			if refused.Load() < 1000 {
				t.Errorf("flooder refused %d times, want a flood (at least 1000)", refused.Load())
			}
			if got := admitted.Load(); got > limit {
				t.Errorf("flooding address admitted %d times in %v, want at most burst+1 + rate×t = %d", got, elapsed, limit)
			}
			if honestOK*100 < honestTried*99 {
				t.Errorf("honest handshakes: %d of %d succeeded, want at least 99%%; failures: %v", honestOK, honestTried, failures)
			}
			m := scrape(t, base)
			shed := m[`stompgate_handshake_limiter_local_decisions_total{reason="refused"}`] +
				m[`stompgate_handshake_limiter_local_decisions_total{reason="in_flight"}`]
			if shed == 0 {
				t.Errorf("no shed decision counted in stompgate_handshake_limiter_local_decisions_total, want the flood shed")
			}
			if got := m["stompgate_handshake_limiter_fallback"]; got != 0 {
				t.Errorf("stompgate_handshake_limiter_fallback = %v after the flood, want 0", got)
			}
			if got := m["stompgate_session_cap_fallback"]; got != 0 {
				t.Errorf("stompgate_session_cap_fallback = %v after the flood, want 0", got)
			}
			if got := m[`stompgate_handshakes_total{result="store_error"}`]; got != 0 {
				t.Errorf(`stompgate_handshakes_total{result="store_error"} = %v, want 0`, got)
			}
			t.Logf("accepted %v, redis decisions %v, memory decisions %v, local %v",
				m[`stompgate_handshakes_total{result="accepted"}`],
				m[`stompgate_handshake_limiter_decision_seconds_count{store="redis"}`],
				m[`stompgate_handshake_limiter_decision_seconds_count{store="memory"}`],
				m[`stompgate_handshake_limiter_decision_seconds_count{store="local"}`])
			t.Logf("session caps: %v decided on own count, confirmations answered %v failed %v; limiter confirmations answered %v failed %v",
				m["stompgate_session_cap_local_decisions_total"],
				m[`stompgate_session_cap_confirmations_total{result="answered"}`],
				m[`stompgate_session_cap_confirmations_total{result="failed"}`],
				m[`stompgate_handshake_limiter_confirmations_total{result="answered"}`],
				m[`stompgate_handshake_limiter_confirmations_total{result="failed"}`])
			t.Logf("shed %v; queue_full %v, queue_wait %v, timeout %v, sent to redis %v", shed,
				m[`stompgate_handshake_limiter_local_decisions_total{reason="queue_full"}`],
				m[`stompgate_handshake_limiter_local_decisions_total{reason="queue_wait"}`],
				m[`stompgate_handshake_limiter_local_decisions_total{reason="timeout"}`],
				m["stompgate_handshake_redis_batched_decisions_total"])
		})
	}
}

// floodUpgrades sends upgrade requests from ip (X-Forwarded-For through
// the trusted loopback proxy) on one keep-alive connection, back to back,
// until ctx ends, counting 101s and 429s. A 101 ends the connection (it
// now speaks WebSocket); the next request goes on a new one.
func floodUpgrades(ctx context.Context, base, ip string, admitted, refused, errs *atomic.Int64) {
	addr := strings.TrimPrefix(base, "http://")
	req := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: " + stomptest.Subprotocol + "\r\nX-Forwarded-For: " + ip + "\r\n\r\n"
	d := net.Dialer{}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		br := bufio.NewReader(c)
		for ctx.Err() == nil {
			if _, err := c.Write([]byte(req)); err != nil {
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusSwitchingProtocols {
				admitted.Add(1)
				break
			}
			if resp.StatusCode != http.StatusTooManyRequests {
				errs.Add(1)
				break
			}
			refused.Add(1)
		}
		stop()
		_ = c.Close()
	}
}

// honestHandshake is one WebSocket handshake from ip; the connection is
// closed at once.
func honestHandshake(base, ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, wsURL(base), &websocket.DialOptions{
		Subprotocols: []string{stomptest.Subprotocol},
		HTTPHeader:   http.Header{"X-Forwarded-For": {ip}},
	})
	if err != nil {
		return fmt.Errorf("from %s: %v (%s)", ip, err, describe(resp))
	}
	_ = ws.CloseNow()
	return nil
}

// TestLimiterSettingErrors: a bad value of a limiter setting stops
// start-up with a message naming it.
func TestLimiterSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"", []string{"-redis-queue-wait", "0s"}, nil, "-redis-queue-wait"},
		{"", []string{"-redis-timeouts-to-fail", "0"}, nil, "-redis-timeouts-to-fail"},
		{"", []string{"-redis-confirm-timeout", "10ms"}, nil, "-redis-confirm-timeout"},
		{"", nil, map[string]string{"WSSERVER_REDIS_CONFIRM_TIMEOUT": "-1s"}, "WSSERVER_REDIS_CONFIRM_TIMEOUT"},
		{"", []string{"-limiter-shed-keys", "-1"}, nil, "-limiter-shed-keys"},
		{"", nil, map[string]string{"WSSERVER_LIMITER_IN_FLIGHT_PER_KEY": "-2"}, "WSSERVER_LIMITER_IN_FLIGHT_PER_KEY"},
	})
}
