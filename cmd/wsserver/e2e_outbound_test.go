package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/testproc"
)

// maskedText is a client's text WebSocket frame carrying p (under 64 KiB).
func maskedText(p string) []byte {
	b := []byte{0x81}
	if len(p) < 126 {
		b = append(b, 0x80|byte(len(p)))
	} else {
		b = append(b, 0x80|126, byte(len(p)>>8), byte(len(p)))
	}
	key := [4]byte{7, 1, 9, 3}
	b = append(b, key[:]...)
	for i := range len(p) {
		b = append(b, p[i]^key[i&3])
	}
	return b
}

// dialNonReader opens a session over plain TCP with a 4 KiB receive
// buffer, subscribes it to dest and waits for the subscription's RECEIPT;
// after that it never reads.
func dialNonReader(t *testing.T, addr, dest string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, clientTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.(*net.TCPConn).SetReadBuffer(4096)
	_ = nc.SetDeadline(time.Now().Add(clientTimeout))
	req := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v12.stomp\r\n\r\n"
	msg := append([]byte(req), maskedText("CONNECT\naccept-version:1.2\nhost:h\nheart-beat:0,0\n\n\x00")...)
	msg = append(msg, maskedText("SUBSCRIBE\nid:0\ndestination:"+dest+"\nreceipt:s\n\n\x00")...)
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	var seen []byte
	for !bytes.Contains(seen, []byte("RECEIPT")) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("waiting for the RECEIPT: %v (read %q)", err, seen)
		}
		seen = append(seen, b)
	}
	_ = nc.SetDeadline(time.Time{})
	return nc
}

// TestOutboundBudgetEndToEnd runs the slow-reader attack against the
// program as an operator starts it: sessions that never read and an
// honest reader on a topic that gets 60 KB messages. The budget set by
// -outbound-total-bytes sheds the stuck sessions, the metrics show the
// bound, the total within it and the sheds, and the honest reader gets
// every message.
func TestOutboundBudgetEndToEnd(t *testing.T) {
	const (
		budget   = 2 << 20
		stuck    = 6
		messages = 30
		size     = 60_000
	)
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	loose := strings.Replace(testPolicy, "rate: 30r/m\n    burst: 5", "rate: 100r/s\n    burst: 50", 1)
	if err := os.WriteFile(policyPath, []byte(loose), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	admin := "127.0.0.1:" + strconv.Itoa(testproc.FreePort(t))
	base := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-admin-addr", admin, "-log-level", "error", "-policy", policyPath,
			"-send-limit", "1000", "-outbound-bytes", "1048576", "-outbound-total-bytes", strconv.Itoa(budget),
			"-socket-send-buffer", "65536", "-write-timeout", "2s", "-shutdown-timeout", "5s"},
			func(string) string { return "" }, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	registerAdmin(t, base, "http://"+admin)
	waitFor(t, 10*time.Second, func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	for range stuck {
		dialNonReader(t, addr, "/topic/flood")
	}
	honest := dialStomp(t, wsURL(base))
	defer disconnect(t, honest)
	sub := subscribe(t, honest, "/topic/flood")
	pub := dialStomp(t, wsURL(base))
	defer disconnect(t, pub)
	body := bytes.Repeat([]byte("f"), size)
	for i := range messages {
		if err := pub.Send("/topic/flood", "text/plain", body); err != nil {
			t.Fatalf("SEND %d: %v", i, err)
		}
		if m := nextMessage(t, sub); len(m.Body) != size {
			t.Fatalf("honest message %d: %d bytes, want %d", i, len(m.Body), size)
		}
		s := scrape(t, base)
		if q, bound := s.sum("stompgate_outbound_queued_bytes"), float64(budget+(stuck+2)*(size+1024)); q > bound {
			t.Fatalf("after message %d: stompgate_outbound_queued_bytes %.0f, want at most %.0f (the budget plus one message per session)", i, q, bound)
		}
	}
	s := scrape(t, base)
	if got := s.sum("stompgate_outbound_budget_bytes"); got != budget {
		t.Errorf("stompgate_outbound_budget_bytes = %.0f, want %d", got, budget)
	}
	if got := s.sum("stompgate_outbound_budget_sheds_total"); got < 1 || got > stuck {
		t.Errorf("stompgate_outbound_budget_sheds_total = %.0f, want between 1 and %d", got, stuck)
	}
	waitFor(t, 15*time.Second, func() error {
		if n := scrape(t, base).sum("stompgate_sessions_closed_total", `reason="outbound_budget"`); n < 1 {
			return fmt.Errorf("%.0f sessions closed as outbound_budget", n)
		}
		return nil
	})
}

// TestOutboundSettingErrors: bad server-wide outbound settings stop
// start-up with a message naming the setting.
func TestOutboundSettingErrors(t *testing.T) {
	expectSettingErrors(t, []settingCase{
		{"negative total", []string{"-outbound-total-bytes", "-1"}, nil, "-outbound-total-bytes"},
		{"total below one session", []string{"-outbound-bytes", "1048576", "-outbound-total-bytes", "1024"}, nil, "-outbound-total-bytes"},
		{"negative send buffer", []string{"-socket-send-buffer", "-1"}, nil, "-socket-send-buffer"},
		{"tiny send buffer in env", nil, map[string]string{"WSSERVER_SOCKET_SEND_BUFFER": "100"}, "WSSERVER_SOCKET_SEND_BUFFER"},
	})
	// Zero turns each bound off, and starts.
	expectStarts(t, "-outbound-total-bytes", "0", "-socket-send-buffer", "0")
}
