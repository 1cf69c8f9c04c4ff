package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/internal/stomptest"
)

// TestCompressionCoderClient has coder/websocket clients, offering
// permessage-deflate as browsers do, receive a burst of similar MESSAGEs
// (batched, and under context takeover compressed as one stream) in both
// modes: every frame arrives whole and in order.
func TestCompressionCoderClient(t *testing.T) {
	for _, takeover := range []bool{false, true} {
		t.Run(fmt.Sprintf("takeover %v", takeover), func(t *testing.T) {
			ts := startServer(t, Config{Compression: Compression{Enabled: true, ContextTakeover: takeover}, ControlLimit: 1 << 20})
			var subs []*rawClient
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), stomptest.Timeout)
				ws, resp, err := websocket.Dial(ctx, ts.url, &websocket.DialOptions{
					Subprotocols:    []string{"v12.stomp"},
					CompressionMode: websocket.CompressionContextTakeover,
				})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = ws.CloseNow() })
				if ext := resp.Header.Get("Sec-WebSocket-Extensions"); !strings.HasPrefix(ext, "permessage-deflate") {
					t.Fatalf("negotiated %q, want permessage-deflate", ext)
				}
				c := stomptest.NewRaw(t, ws)
				c.Connect()
				c.Send("SUBSCRIBE\nid:0\ndestination:/topic/chat\nreceipt:s\n\n\x00")
				c.Expect("RECEIPT")
				subs = append(subs, c)
			}
			pub := dialRaw(t, ts.url)
			pub.Connect()
			const n = 300
			for i := 0; i < n; i += 10 {
				var burst strings.Builder
				for j := i; j < i+10; j++ {
					fmt.Fprintf(&burst, "SEND\ndestination:/topic/chat\n\n{\"user\":\"ana\",\"n\":%d,\"text\":\"%s\"}\x00", j, strings.Repeat("see you at the table ", 1+j%7))
				}
				pub.Send(burst.String())
			}
			for k, c := range subs {
				for i := range n {
					f, err := c.Next(10 * time.Second)
					if err != nil {
						t.Fatalf("subscriber %d, message %d: %v", k, i, err)
					}
					if want := fmt.Sprintf("{\"user\":\"ana\",\"n\":%d,", i); f.Command != "MESSAGE" || !strings.HasPrefix(string(f.Body), want) {
						t.Fatalf("subscriber %d, message %d: %s %.60q, want a MESSAGE starting %q", k, i, f.Command, f.Body, want)
					}
				}
			}
		})
	}
}
