package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/admission"
	"github.com/stompgate/stompgate/internal/stomptest"
)

// startBounded is startServing within the public listener's bounds
// (publicServer), as run serves it, so that connections meet the
// accept-time refusals before net/http.
func startBounded(t *testing.T, args ...string) string {
	t.Helper()
	return serveAsRun(t, true, args...)
}

// rawUpgrade is a WebSocket handshake request as a client sends it.
const rawUpgrade = "GET /ws HTTP/1.1\r\nHost: stompgate.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v12.stomp\r\n\r\n"

// rawAccept is the Sec-WebSocket-Accept of rawUpgrade's key (RFC 6455
// section 1.3).
const rawAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

// dialRaw opens a TCP connection to base from the loopback address from
// (empty: any), closed when the test ends.
func dialRaw(t *testing.T, base, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: clientTimeout}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatalf("dial %s from %q: %v", base, from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawAnswer reads the response to a raw handshake on c: "101" for an
// upgrade with the right Sec-WebSocket-Accept, "cheap" for the
// listener's prebuilt 503 (Retry-After, Connection: close), or a
// description of anything else.
func rawAnswer(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(clientTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusSwitchingProtocols && resp.Header.Get("Sec-WebSocket-Accept") == rawAccept:
		return "101"
	case resp.StatusCode == http.StatusServiceUnavailable:
		body, _ := io.ReadAll(resp.Body)
		ra := resp.Header.Get("Retry-After")
		if resp.Close && ra != "" && ra != "0" && string(body) == "server busy (connections), retry after "+ra+"s\n" {
			return "cheap"
		}
		return fmt.Sprintf("503 %v %q", resp.Header, body)
	}
	return fmt.Sprintf("%d %v", resp.StatusCode, resp.Header)
}

// A burst of connections past -accept-rate is answered at accept with
// the prebuilt 503, counted; the connections within the bound complete
// their WebSocket handshake, and the sessions already open keep working.
func TestAcceptRateRefusesCheaply(t *testing.T) {
	t.Parallel()
	// Four connections at once, then one every hundred seconds: the
	// burst below is not refilled while it runs.
	base := startBounded(t, "-accept-rate", "0.01", "-accept-burst", "4", "-admit-rate", "1000")
	sub := dialStomp(t, wsURL(base))
	pub := dialStomp(t, wsURL(base))
	msgs := subscribe(t, sub, "/topic/accept")

	const burst = 10
	conns := make([]net.Conn, burst)
	for i := range conns {
		conns[i] = dialRaw(t, base, "")
		if _, err := io.WriteString(conns[i], rawUpgrade); err != nil {
			t.Fatalf("writing handshake %d: %v", i, err)
		}
	}
	counts := map[string]int{}
	for _, c := range conns {
		counts[rawAnswer(t, c)]++
	}
	// Two tokens were left, one more may have come since.
	if counts["101"] < 2 || counts["101"] > 3 || counts["101"]+counts["cheap"] != burst {
		t.Fatalf("answers %v, want 2 or 3 upgrades and the rest the prebuilt 503", counts)
	}
	s := scrape(t, base)
	if got := s.sum("stompgate_listener_refused_total", `reason="accept_rate"`); got != float64(counts["cheap"]) {
		t.Errorf("stompgate_listener_refused_total{reason=accept_rate} = %v, want %d", got, counts["cheap"])
	}
	// A refusal at accept read no request: the handshake counters
	// never saw it.
	if got := s.sum("stompgate_admission_refused_total"); got != 0 {
		t.Errorf("stompgate_admission_refused_total = %v, want 0", got)
	}

	if err := pub.Send("/topic/accept", "text/plain", []byte("still here"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("send on an open session: %v", err)
	}
	if m := nextMessage(t, msgs); string(m.Body) != "still here" {
		t.Errorf("open session received %q, want %q", m.Body, "still here")
	}
}

// dialWSFrom performs a WebSocket handshake from the loopback address
// from; the connection is closed when the test ends.
func dialWSFrom(t *testing.T, base, from string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	ws, resp, err := websocket.Dial(ctx, wsURL(base), &websocket.DialOptions{
		Subprotocols: []string{stomptest.Subprotocol},
		HTTPClient:   &http.Client{Transport: tr},
	})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws, resp, nil
}

// One address holding connections open without a whole request is held to
// its share of the pending bound: its next connection gets the prebuilt
// 503, another address completes its handshake, and a place comes back
// when one of the silent connections closes.
func TestAcceptPendingPerAddr(t *testing.T) {
	t.Parallel()
	base := startBounded(t, "-accept-rate", "-1", "-max-pending-conns-per-addr", "2")
	open := dialStomp(t, wsURL(base))
	msgs := subscribe(t, open, "/topic/pending")

	const attacker = "127.0.0.77"
	// Slow, not silent: where the kernel defers accepting until data
	// arrives (TCP_DEFER_ACCEPT), a connection that sends nothing never
	// reaches the listener at all.
	silent := []net.Conn{dialRaw(t, base, attacker), dialRaw(t, base, attacker)}
	for _, c := range silent {
		if _, err := io.WriteString(c, "GET /ws HTTP/1.1\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	third := dialRaw(t, base, attacker)
	if _, err := io.WriteString(third, rawUpgrade); err != nil {
		t.Fatal(err)
	}
	if got := rawAnswer(t, third); got != "cheap" {
		t.Fatalf("third connection of a silent address: %s, want the prebuilt 503", got)
	}
	if got := scrape(t, base).sum("stompgate_listener_refused_total", `reason="pending_addr"`); got != 1 {
		t.Errorf("stompgate_listener_refused_total{reason=pending_addr} = %v, want 1", got)
	}

	ws, resp, err := dialWSFrom(t, base, "127.0.0.78")
	if err != nil {
		t.Fatalf("handshake from another address: %v (%s)", err, describe(resp))
	}
	other := connectStomp(t, ws)
	if err := other.Send("/topic/pending", "text/plain", []byte("from another address"), stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("send: %v", err)
	}
	if m := nextMessage(t, msgs); string(m.Body) != "from another address" {
		t.Errorf("open session received %q", m.Body)
	}

	// One silent connection goes away: its place is the address's again.
	_ = silent[0].Close()
	waitFor(t, clientTimeout, func() error {
		c := dialRaw(t, base, attacker)
		defer c.Close()
		if _, err := io.WriteString(c, rawUpgrade); err != nil {
			return err
		}
		if got := rawAnswer(t, c); got != "101" {
			return fmt.Errorf("handshake from the address after a close: %s", got)
		}
		return nil
	})
}

// TestAcceptSettingErrors: bad listener bounds stop start-up with an
// error naming the setting; -1 turns each off and starts.
func TestAcceptSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"negative rate", []string{"-accept-rate", "-0.5"}, nil, "-accept-rate"},
		{"rate in env", nil, map[string]string{"WSSERVER_ACCEPT_RATE": "-3"}, "WSSERVER_ACCEPT_RATE"},
		{"negative burst", []string{"-accept-burst", "-1"}, nil, "-accept-burst"},
		{"negative pending", []string{"-max-pending-conns", "-2"}, nil, "-max-pending-conns"},
		{"negative share", []string{"-max-pending-conns-per-addr", "-2"}, nil, "-max-pending-conns-per-addr"},
		{"negative rate per address", []string{"-accept-rate-per-addr", "-2"}, nil, "-accept-rate-per-addr"},
		{"timeout too short", []string{"-pending-conn-timeout", "10ms"}, nil, "-pending-conn-timeout"},
		{"timeout too long", []string{"-pending-conn-timeout", "2m"}, nil, "-pending-conn-timeout"},
	})
	expectStarts(t, "-accept-rate", "-1", "-max-pending-conns", "-1", "-max-pending-conns-per-addr", "-1")
}

// TestAcceptDefaults: the listener's bounds follow the admission's, so
// that by default they never refuse what its bucket would admit.
func TestAcceptDefaults(t *testing.T) {
	for _, c := range []struct {
		args                             []string
		rate                             float64
		burst, pending, perAddr, rateAdr int
		tls                              bool
	}{
		{[]string{"-admit-rate", "500", "-admit-burst", "10"}, 1000, 100, 1000, 16, 100, false},
		{[]string{"-admit-rate", "500", "-admit-burst", "80"}, 1000, 160, 1000, 16, 100, false},
		{[]string{"-admit-rate", "20"}, 40, 10, 64, 16, 20, false},
		{[]string{"-admit-rate", "-1"}, 0, 0, 1024, 16, 0, false},
		{[]string{"-admit-rate", "100", "-accept-rate", "300", "-max-pending-conns", "5", "-max-pending-conns-per-addr", "3", "-accept-rate-per-addr", "7"}, 300, 30, 5, 3, 7, false},
		{[]string{"-accept-rate", "-1", "-max-pending-conns", "-1", "-max-pending-conns-per-addr", "-1", "-accept-rate-per-addr", "-1"}, 0, 0, 0, 0, 0, false},
	} {
		var st settings
		if err := st.parse(c.args, func(string) string { return "" }, io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := st.validate(); err != nil {
			t.Fatal(err)
		}
		gate, err := admission.New(st.admit.cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := st.listenerConfig(gate)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Rate != c.rate || cfg.Burst != c.burst || cfg.MaxPending != c.pending || cfg.MaxPendingPerAddr != c.perAddr || cfg.RatePerAddr != c.rateAdr || cfg.NoResponse != c.tls {
			t.Errorf("%q: rate %v burst %d pending %d per address %d rate per address %d, want %v %d %d %d %d",
				c.args, cfg.Rate, cfg.Burst, cfg.MaxPending, cfg.MaxPendingPerAddr, cfg.RatePerAddr, c.rate, c.burst, c.pending, c.perAddr, c.rateAdr)
		}
	}
}
