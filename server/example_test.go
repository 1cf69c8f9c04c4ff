package server_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/server"
	"github.com/stompgate/stompgate/stompframe"
)

// wordFilter drops, silently, every SEND whose body holds one of its
// words: the sender gets no ERROR and no RECEIPT, and nobody receives the
// message. It keeps no state, so one value serves every session.
type wordFilter []string

// blockedWord is wordFilter's drop reason, made once.
var blockedWord = outcome.NewDrop("blocked_word")

func (w wordFilter) Handle(s *interceptor.Session, f *stompframe.Frame, now time.Time) interceptor.Result {
	if f.Command != stompframe.CommandSend {
		return interceptor.Continue()
	}
	for _, word := range w {
		if bytes.Contains(f.Body, []byte(word)) {
			return interceptor.DropFrame(blockedWord)
		}
	}
	return interceptor.Continue()
}

// A server embedded in a Go program: an in-process broker, anonymous
// sessions and a stage of the program's own, with no Redis, no JWT and no
// metrics. A go-stomp client subscribes to a topic and sends to it; the
// message the stage drops never arrives.
func Example() {
	principal, err := interceptor.NewPrincipalStage(interceptor.PrincipalConfig{})
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.Config{
		Chain:  interceptor.NewChain(nil, principal, wordFilter{"spam"}),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), &websocket.DialOptions{
		Subprotocols: []string{"v12.stomp"},
	})
	if err != nil {
		panic(err)
	}
	// go-stomp reads STOMP from a byte stream: the WebSocket's text
	// messages seen as one.
	conn, err := stomp.Connect(websocket.NetConn(ctx, ws, websocket.MessageText),
		stomp.ConnOpt.HeartBeat(0, 0))
	if err != nil {
		panic(err)
	}
	fmt.Println("connected to", conn.Server())

	// The session's frames are handled in order: the subscription is in
	// place before the first SEND.
	sub, err := conn.Subscribe("/topic/chat", stomp.AckAuto)
	if err != nil {
		panic(err)
	}
	for _, body := range []string{"hello", "buy spam now", "bye"} {
		// A dropped SEND gets no RECEIPT, so none is asked for.
		if err := conn.Send("/topic/chat", "text/plain", []byte(body), stomp.SendOpt.NoContentLength); err != nil {
			panic(err)
		}
	}
	for range 2 {
		m := <-sub.C
		if m.Err != nil {
			panic(m.Err)
		}
		fmt.Println("received:", string(m.Body))
	}
	// DISCONNECT waits for the server's RECEIPT; the server then closes
	// the WebSocket, which may beat the client's own close, so the
	// error of that close says nothing.
	_ = conn.Disconnect()
	if err := srv.Shutdown(ctx); err != nil {
		panic(err)
	}
	// Output:
	// connected to stompgate
	// received: hello
	// received: bye
}
