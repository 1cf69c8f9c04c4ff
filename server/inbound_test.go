package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/outcome"
)

// sockClient is a WebSocket client written frame by frame on a bare TCP
// socket, for the frames no WebSocket library sends on its own: endless
// empty continuation fragments.
type sockClient struct {
	nc net.Conn
	br *bufio.Reader
}

func dialSock(t *testing.T, wsURL string) *sockClient {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", u.Host, stomptest.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: v12.stomp\r\n\r\n", u.Path, u.Host, key)
	br := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(stomptest.Timeout))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %s", resp.Status)
	}
	return &sockClient{nc: nc, br: br}
}

// wsFrame returns one masked client frame (mask key zero, so the payload
// goes as it is).
func wsFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var out []byte
	switch n := len(payload); {
	case n < 126:
		out = []byte{b0, 0x80 | byte(n)}
	case n < 1<<16:
		out = []byte{b0, 0x80 | 126, byte(n >> 8), byte(n)}
	default:
		panic("frame too long for the test")
	}
	out = append(out, 0, 0, 0, 0)
	return append(out, payload...)
}

// connect sends CONNECT with the given headers and reads until CONNECTED
// has arrived.
func (c *sockClient) connect(t *testing.T, headers ...string) {
	t.Helper()
	h := strings.Join(append([]string{"accept-version:1.2", "host:x"}, headers...), "\n")
	if _, err := c.nc.Write(wsFrame(true, 1, []byte("CONNECT\n"+h+"\n\n\x00"))); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 512)
	for !bytes.Contains(got, []byte("CONNECTED")) {
		n, err := c.br.Read(buf)
		if err != nil {
			t.Fatalf("waiting for CONNECTED: %v (read %q)", err, got)
		}
		got = append(got, buf[:n]...)
	}
}

// flood writes chunk again and again until ctx ends or a write fails.
// Writes block when the server stops reading: that is the point.
func (c *sockClient) flood(ctx context.Context, chunk []byte) {
	for ctx.Err() == nil {
		_ = c.nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.nc.Write(chunk); err != nil && !isTimeout(err) {
			return
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// inputObserver counts InputPaused on top of countingObserver.
type inputObserver struct {
	countingObserver
	mu     sync.Mutex
	pauses map[string]int
}

func (o *inputObserver) InputPaused(budget string, _ time.Duration) {
	o.mu.Lock()
	o.pauses[budget]++
	o.mu.Unlock()
}

func (o *inputObserver) count(budget string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pauses[budget]
}

// TestInboundBudget runs the floods no other limit applies to against a
// real server, each from one session as fast as its socket takes them,
// and checks that the server read no more than its budget in any window:
// it paused, it counted the pauses, and the session stayed open.
func TestInboundBudget(t *testing.T) {
	const (
		limit  = 400
		bytesW = 64 << 10
		window = 50 * time.Millisecond
	)
	ack := strings.Repeat("ACK\nid:1\n\n\x00", 300)
	big := "SEND\ndestination:/topic/nobody\n\n" + strings.Repeat("x", 30<<10) + "\x00"
	for _, tc := range []struct {
		name   string
		open   []byte // written once before the flood
		chunk  []byte // written again and again
		budget string
	}{
		{"empty continuations", wsFrame(false, 1, nil), bytes.Repeat(wsFrame(false, 0, nil), 1000), outcome.InputBudgetFrames},
		{"heart-beat EOLs", nil, bytes.Repeat(wsFrame(true, 1, []byte("\n\n\n\n")), 200), outcome.InputBudgetFrames},
		{"ACKs packed in messages", nil, wsFrame(true, 1, []byte(ack)), outcome.InputBudgetFrames},
		{"pings", nil, bytes.Repeat(wsFrame(true, 9, []byte("p")), 1000), outcome.InputBudgetFrames},
		{"large SENDs", nil, wsFrame(true, 1, []byte(big)), outcome.InputBudgetBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &inputObserver{countingObserver: countingObserver{closed: map[string]int{}, protocol: map[string]int{}}, pauses: map[string]int{}}
			ts := startServer(t, Config{InboundFrames: limit, InboundBytes: bytesW, InboundWindow: window, Observer: obs})
			c := dialSock(t, ts.url)
			c.connect(t)
			var s *session
			ts.reg.each(func(one *session) { s = one })
			if tc.open != nil {
				if _, err := c.nc.Write(tc.open); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			start := time.Now()
			go func() {
				defer close(done)
				c.flood(ctx, tc.chunk)
			}()
			poll.Until(t, 30*time.Second, func() error {
				if n := s.in.pauses.Load(); n < 5 {
					return fmt.Errorf("%d pauses", n)
				}
				return nil
			})
			frames, byts, windows := s.in.totalFrames.Load(), s.in.totalBytes.Load(), s.in.windows.Load()
			elapsed := time.Since(start)
			cancel()
			<-done

			if frames > limit*windows {
				t.Errorf("read %d frames in %d windows; at most %d per window", frames, windows, limit)
			}
			if byts > bytesW*windows {
				t.Errorf("read %d payload bytes in %d windows; at most %d per window", byts, windows, bytesW)
			}
			// However the windows were counted, the server cannot have
			// read more than the budget of every window that began since
			// the flood started, and one more. A slow machine reads less.
			if most := int64(elapsed/window+2) * limit; frames > most {
				t.Errorf("read %d frames in %v; the budget allows at most %d", frames, elapsed, most)
			}
			if n := obs.count(tc.budget); n == 0 {
				t.Errorf("InputPaused(%q) was never reported (pauses: %v)", tc.budget, obs.pauses)
			}
			if n := ts.Sessions(); n != 1 {
				t.Errorf("%d sessions open after the flood, want 1: a pause does not close", n)
			}
		})
	}
}

// TestInboundPauseKeepsHeartBeat floods empty continuation fragments,
// which never complete a message, from a session that negotiated
// heart-beats every 300 ms: the reader's pauses last a sixth of that, and
// the session must not be taken for silent while the server chooses not
// to read it.
func TestInboundPauseKeepsHeartBeat(t *testing.T) {
	ts := startServer(t, Config{InboundFrames: 400, InboundWindow: 50 * time.Millisecond,
		HeartBeatReceive: 300 * time.Millisecond, HeartBeatTolerance: 300 * time.Millisecond})
	c := dialSock(t, ts.url)
	c.connect(t, "heart-beat:300,0")
	var s *session
	ts.reg.each(func(one *session) { s = one })
	if _, err := c.nc.Write(wsFrame(false, 1, nil)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.flood(ctx, bytes.Repeat(wsFrame(false, 0, nil), 1000))
	}()
	// Forty pauses are over three times the 600 ms a silent session is
	// given.
	poll.Until(t, 30*time.Second, func() error {
		if n := s.in.pauses.Load(); n < 40 {
			if ts.Sessions() == 0 {
				return poll.Stop(fmt.Errorf("the session ended after %d pauses", n))
			}
			return fmt.Errorf("%d pauses", n)
		}
		return nil
	})
	cancel()
	<-done
	if n := ts.obs.closedCount(outcome.CloseHeartBeat); n != 0 {
		t.Errorf("%d sessions closed for heart-beat timeout while paused by the server", n)
	}
	if n := ts.Sessions(); n != 1 {
		t.Errorf("%d sessions open after the flood, want 1", n)
	}
}

func TestInboundConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{InboundFrames: -1}, "server: InboundFrames -1 is negative"},
		{Config{InboundBytes: -1}, "server: InboundBytes -1 is negative"},
		{Config{InboundWindow: -time.Second}, "server: InboundWindow -1s is negative"},
	} {
		if _, err := New(tc.cfg); err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want %q matching ErrInvalidConfig", tc.cfg, err, tc.want)
		}
	}
}
