package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-stomp/stomp/v3"

	"github.com/stompgate/stompgate/server"
)

// A backend embedded in the program: SENDs to "/app/..." go to the
// AppHandler instead of other clients, and the handler answers the sender
// alone through its user destination with Server.Publish. Without Redis,
// the handler is the program's own function.
func ExampleAppHandler() {
	var srv *server.Server
	echo := server.AppHandlerFunc(func(ctx context.Context, m server.AppMessage) error {
		reply := strings.ToUpper(string(m.Body))
		srv.Publish(server.UserDestination(m.Principal, "replies"), nil, []byte(reply))
		return nil
	})
	srv, err := server.New(server.Config{
		AppHandler: echo,
		Logger:     slog.New(slog.DiscardHandler),
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
	conn, err := stomp.Connect(websocket.NetConn(ctx, ws, websocket.MessageText), stomp.ConnOpt.HeartBeat(0, 0))
	if err != nil {
		panic(err)
	}
	sub, err := conn.Subscribe("/user/queue/replies", stomp.AckAuto)
	if err != nil {
		panic(err)
	}
	// The RECEIPT that Send waits for comes after the handler returned.
	if err := conn.Send("/app/echo", "text/plain", []byte("ready"), stomp.SendOpt.Receipt); err != nil {
		panic(err)
	}
	m := <-sub.C
	if m.Err != nil {
		panic(m.Err)
	}
	fmt.Println(m.Destination, string(m.Body))
	_ = conn.Disconnect()
	if err := srv.Shutdown(ctx); err != nil {
		panic(err)
	}
	// Output:
	// /user/queue/replies READY
}
