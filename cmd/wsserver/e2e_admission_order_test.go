package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/internal/testredis"
)

// admitOrderPolicy lets one handshake per address through and earns the
// next back after 20 s, and caps each address at 100 open sessions, so
// that both per-client checks of a handshake (the limit and the cap)
// are Redis round trips with -redis-url.
const admitOrderPolicy = `zones:
  - name: ws_handshake
    rate: 3r/m
    burst: 0
    max_connections: 100
    routes:
      - {method: GET, path: /ws, upstream: ws}
`

// redisCalls returns the calls of every command a real Redis has run
// (INFO commandstats), by command, less those of reading it: the
// connection's HELLO and CLIENT SETINFO, and INFO.
func redisCalls(t *testing.T, url string) map[string]int64 {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	text, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(text, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		if name == "info" || name == "hello" || strings.HasPrefix(name, "client") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q: %v", line, err)
		}
		out[name] = n
	}
	return out
}

// callsChanged lists the commands whose calls differ between two
// redisCalls, as "evalsha +40".
func callsChanged(before, after map[string]int64) []string {
	var out []string
	for name, n := range after {
		if d := n - before[name]; d != 0 {
			out = append(out, fmt.Sprintf("%s %+d", name, d))
		}
	}
	sort.Strings(out)
	return out
}

// TestAdmissionRefusalCostsNoRedis: with the handshake limit and the
// session cap in Redis, a handshake the busy instance refuses (503,
// rate) makes no Redis round trip at all, as a real Redis counts its
// commands: the admission decides before the per-client checks.
func TestAdmissionRefusalCostsNoRedis(t *testing.T) {
	rs := testredis.Start(t)
	// One token, and the next in 1000 s.
	base, _ := startApp(t, "-policy", writePolicy(t, admitOrderPolicy), "-redis-url", rs.URL(),
		"-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s", "-admit-rate", "0.001", "-admit-burst", "1")
	first, resp := admitFrom(t, base, "198.51.100.60")
	if first == nil {
		t.Fatalf("first handshake: %s", describe(resp))
	}
	// The session ends and gives its cap lease back: nothing of it is
	// left to renew in Redis while the refusals are counted.
	disconnect(t, first)
	waitFor(t, clientTimeout, func() error {
		m := scrape(t, base)
		if got := m.sum("stompgate_admission_sessions"); got != 0 {
			return fmt.Errorf("admission sessions %v after the session ended", got)
		}
		if got := m.sum("stompgate_session_cap_leases", `scope="ip"`); got != 0 {
			return fmt.Errorf("session cap leases %v after the session ended", got)
		}
		return nil
	})
	// The lease's release may still be on its way to Redis: wait until
	// two reads 100 ms apart agree.
	before := redisCalls(t, rs.URL())
	waitFor(t, clientTimeout, func() error {
		time.Sleep(100 * time.Millisecond)
		now := redisCalls(t, rs.URL())
		if d := callsChanged(before, now); len(d) > 0 {
			before = now
			return fmt.Errorf("Redis still busy: %v", d)
		}
		return nil
	})
	if before["evalsha"]+before["eval"] == 0 {
		t.Fatalf("the admitted handshake made no script call: %v (are the checks in Redis?)", before)
	}
	const refused = 20
	for i := range refused {
		_, resp := admitFrom(t, base, fmt.Sprintf("198.51.100.%d", 61+i))
		wantBusy(t, resp, "rate", 60)
	}
	after := redisCalls(t, rs.URL())
	if d := callsChanged(before, after); len(d) > 0 {
		t.Errorf("%d refused handshakes made Redis calls: %v, want none", refused, d)
	}
	m := scrape(t, base)
	if got := m.sum("stompgate_admission_refused_total", `reason="rate"`); got != refused {
		t.Errorf("refused{rate} = %v, want %d", got, refused)
	}
	if got := m.sum("stompgate_handshakes_total", `result="rejected_limit"`); got != 0 {
		t.Errorf("handshakes rejected by the limiter = %v, want 0: it was never asked", got)
	}
}

// TestAdmissionRefundsClientRefusals: a handshake the per-client limit
// refuses (429) after the admission took a token for it gives the token
// back, so one client's excess never spends the instance's rate: after
// four refusals of one address, the two tokens left admit two others.
func TestAdmissionRefundsClientRefusals(t *testing.T) {
	rs := testredis.Start(t)
	base, _ := startApp(t, "-policy", writePolicy(t, admitOrderPolicy), "-redis-url", rs.URL(),
		"-trusted-proxies", "127.0.0.1/32", "-redis-timeout", "2s", "-admit-rate", "0.001", "-admit-burst", "3")
	if c, resp := admitFrom(t, base, "198.51.100.90"); c == nil {
		t.Fatalf("first handshake: %s", describe(resp))
	}
	for range 4 {
		_, resp, err := dialHeader(t, wsURL(base), "198.51.100.90")
		if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("handshake over the address's limit: %s, want 429", describe(resp))
		}
	}
	for _, ip := range []string{"198.51.100.91", "198.51.100.92"} {
		if c, resp := admitFrom(t, base, ip); c == nil {
			t.Fatalf("handshake from %s with tokens given back: %s", ip, describe(resp))
		}
	}
	_, resp := admitFrom(t, base, "198.51.100.93")
	wantBusy(t, resp, "rate", 60)
	m := scrape(t, base)
	for _, c := range []struct {
		name  string
		match []string
		want  float64
	}{
		{"stompgate_admission_admitted_total", nil, 3},
		{"stompgate_admission_sessions", nil, 3},
		{"stompgate_admission_refused_total", []string{`reason="rate"`}, 1},
		{"stompgate_handshakes_total", []string{`result="rejected_limit"`}, 4},
	} {
		if got := m.sum(c.name, c.match...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
}

// TestAdmissionPeakWithinBucket: a crowd of handshakes from distinct
// addresses at once is admitted, by the server's own count, at no more
// than -admit-rate/10 + -admit-burst within any 100 ms, and the gauge
// that reports it says so.
func TestAdmissionPeakWithinBucket(t *testing.T) {
	const rate, burst, crowd = 50, 5, 120
	base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32",
		"-admit-rate", strconv.Itoa(rate), "-admit-burst", strconv.Itoa(burst))
	var (
		mu       sync.Mutex
		admitted int
		wg       sync.WaitGroup
	)
	for i := range crowd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, resp, err := dialHeader(t, wsURL(base), fmt.Sprintf("198.51.%d.%d", 101+i/200, 1+i%200))
			if err != nil && (resp == nil || resp.StatusCode != http.StatusServiceUnavailable) {
				t.Errorf("handshake %d: %v (%s), want admitted or 503", i, err, describe(resp))
				return
			}
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	m := scrape(t, base)
	peak := m.sum("stompgate_admission_peak_admitted")
	if most := float64(rate/10 + burst); peak < 1 || peak > most {
		t.Errorf("peak admitted in 100 ms = %v, want 1 to %v", peak, most)
	}
	if got := m.sum("stompgate_admission_admitted_total"); got != float64(admitted) || admitted < burst {
		t.Errorf("admitted_total = %v, clients admitted %d, want equal and at least the burst %d", got, admitted, burst)
	}
}

// TestAdmissionRefusalClosesConnection: the server closes the connection
// of a handshake it refuses for want of admission, so a refused client
// holds no goroutine, buffer or file descriptor of it until it comes
// back: after the 503 a raw client reads end of file, not a connection
// kept alive.
func TestAdmissionRefusalClosesConnection(t *testing.T) {
	base, _ := startApp(t, "-trusted-proxies", "127.0.0.1/32", "-admit-rate", "0.001", "-admit-burst", "1")
	if c, resp := admitFrom(t, base, "198.51.100.100"); c == nil {
		t.Fatalf("first handshake: %s", describe(resp))
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(clientTimeout)); err != nil {
		t.Fatal(err)
	}
	req := "GET /ws HTTP/1.1\r\nHost: e2e\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: v12.stomp\r\nX-Real-IP: 198.51.100.101\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	wantBusy(t, resp, "rate", 60)
	if !resp.Close {
		t.Errorf("refusal without Connection: close (header %q)", resp.Header.Get("Connection"))
	}
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("after the refusal: read %d bytes, %v; want the server to close (EOF)", n, err)
	}
}
