// Package stomptest drives a STOMP-over-WebSocket server from tests with
// go-stomp's client: the client speaks STOMP over the WebSocket seen as a
// byte stream (websocket.NetConn, text messages), as a browser library
// would send it.
//
// Every step is bounded by Timeout, and every connection is closed when
// the test ends, so a stuck server fails the test instead of hanging it.
package stomptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"
	"go.uber.org/goleak"
)

// Timeout bounds every client step: a dial, a CONNECT, a RECEIPT, a
// message. It is far above what any step needs; reaching it means the
// step is stuck.
const Timeout = 10 * time.Second

// Subprotocol is the WebSocket subprotocol the client asks for: STOMP 1.2.
const Subprotocol = "v12.stomp"

// DialWebSocket performs the WebSocket handshake with url only, asking for
// Subprotocol. On a refused handshake it returns the response (with up to
// 1 KiB of its body unread) and the error. A connection it returns is
// closed when the test ends.
func DialWebSocket(tb testing.TB, url string) (*websocket.Conn, *http.Response, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		return nil, resp, err
	}
	tb.Cleanup(func() { _ = ws.CloseNow() })
	return ws, resp, nil
}

// Connect runs the go-stomp client over an open WebSocket: CONNECT without
// heart-beats, waits for RECEIPTs bounded by Timeout, then opts. It fails
// the test if the server does not answer CONNECTED. The client is
// disconnected when the test ends, if the test has not done it: with a
// DISCONNECT, or by closing the connection if that fails.
func Connect(tb testing.TB, ws *websocket.Conn, opts ...func(*stomp.Conn) error) *stomp.Conn {
	tb.Helper()
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageText)
	all := append([]func(*stomp.Conn) error{
		stomp.ConnOpt.HeartBeat(0, 0),
		stomp.ConnOpt.RcvReceiptTimeout(Timeout),
		stomp.ConnOpt.DisconnectReceiptTimeout(Timeout),
		stomp.ConnOpt.UnsubscribeReceiptTimeout(Timeout),
	}, opts...)
	c, err := stomp.Connect(nc, all...)
	if err != nil {
		tb.Fatalf("stomp.Connect: %v", err)
	}
	tb.Cleanup(func() {
		if c.Disconnect() != nil {
			_ = c.MustDisconnect()
		}
	})
	return c
}

// Dial is DialWebSocket then Connect; a refused handshake fails the test
// with the response described.
func Dial(tb testing.TB, url string, opts ...func(*stomp.Conn) error) *stomp.Conn {
	tb.Helper()
	ws, resp, err := DialWebSocket(tb, url)
	if err != nil {
		tb.Fatalf("dial %s: %v (%s)", url, err, Describe(resp))
	}
	return Connect(tb, ws, opts...)
}

// Describe summarizes a handshake response for failure messages: status,
// headers and body. It reads the body.
func Describe(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	body := ""
	if resp.Body != nil {
		b, _ := io.ReadAll(resp.Body)
		body = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("HTTP %d %v %q", resp.StatusCode, resp.Header, body)
}

// SyncDestination is where Subscribe sends its fence.
const SyncDestination = "/topic/sync"

// Subscribe subscribes c to dest and waits until the server has the
// subscription in place: a SEND to SyncDestination with a receipt on the
// same connection is answered only after the SUBSCRIBE before it was
// handled. (go-stomp must not be given a receipt on SUBSCRIBE itself.)
//
// go-stomp stops reading the connection while a subscription's channel is
// full, and a DISCONNECT then never gets its RECEIPT: when the test ends,
// what it left unread is drained until the subscription closes.
func Subscribe(tb testing.TB, c *stomp.Conn, dest string) *stomp.Subscription {
	tb.Helper()
	sub, err := c.Subscribe(dest, stomp.AckAuto)
	if err != nil {
		tb.Fatalf("subscribe %s: %v", dest, err)
	}
	if err := c.Send(SyncDestination, "", nil, stomp.SendOpt.Receipt); err != nil {
		tb.Fatalf("sync after subscribe %s: %v", dest, err)
	}
	tb.Cleanup(func() {
		go func() {
			for range sub.C {
			}
		}()
	})
	return sub
}

// Next returns the next message of sub, failing the test after Timeout or
// if the subscription ends or carries an error.
func Next(tb testing.TB, sub *stomp.Subscription) *stomp.Message {
	tb.Helper()
	t := time.NewTimer(Timeout)
	defer t.Stop()
	select {
	case m, ok := <-sub.C:
		if !ok {
			tb.Fatalf("subscription %s closed", sub.Destination())
		}
		if m.Err != nil {
			tb.Fatalf("subscription %s: %v", sub.Destination(), m.Err)
		}
		return m
	case <-t.C:
		tb.Fatalf("no message on %s within %v", sub.Destination(), Timeout)
	}
	return nil
}

// IgnoreUnsubscribeWaiter is the goleak option for what go-stomp v3.1.3
// leaves behind when its Unsubscribe misses its wake-up (see Unsubscribe):
// the goroutine it started to wait on the subscription's condition, which
// nothing signals again. Packages whose tests call Unsubscribe pass it to
// goleak.VerifyTestMain.
var IgnoreUnsubscribeWaiter = goleak.IgnoreAnyFunction("github.com/go-stomp/stomp/v3.waitWithTimeout.func1")

// Unsubscribe sends UNSUBSCRIBE for s and fails the test unless the
// server's RECEIPT for it arrives.
//
// go-stomp v3.1.3's Unsubscribe can miss the wake-up it waits for (the
// subscription closes and broadcasts without the lock its waiter holds)
// and report a receipt timeout although the RECEIPT arrived. A
// subscription whose channel has closed got its RECEIPT, so that case
// passes; a RECEIPT that never came still fails.
func Unsubscribe(tb testing.TB, s *stomp.Subscription) {
	tb.Helper()
	err := s.Unsubscribe()
	if err == nil {
		return
	}
	if !errors.Is(err, &stomp.ErrUnsubscribeReceiptTimeout) {
		tb.Fatalf("UNSUBSCRIBE %s: %v", s.Destination(), err)
	}
	deadline := time.After(Timeout)
	for {
		select {
		case _, open := <-s.C:
			if !open {
				return
			}
		case <-deadline:
			tb.Fatalf("UNSUBSCRIBE %s: no RECEIPT: %v", s.Destination(), err)
		}
	}
}
