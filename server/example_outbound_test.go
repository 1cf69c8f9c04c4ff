package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/stompgate/stompgate/server"
)

// A server that bounds what all its sessions hold for writing, and whose
// listener caps every socket's kernel send buffer: serve the http.Server
// on Listener's listener, and read the outbound figures for metrics.
func ExampleServer_Listener() {
	srv, err := server.New(server.Config{
		OutboundTotalBytes: 64 << 20,
		SocketSendBuffer:   64 << 10,
		Logger:             slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	hs := &http.Server{Handler: srv}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(srv.Listener(ln)) }()

	st := srv.OutboundStats()
	fmt.Printf("queued %d of %d bytes, %d sessions shed\n", st.Queued, st.Limit, st.Shed)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	_ = srv.Shutdown(ctx)
	<-done
	// Output: queued 0 of 67108864 bytes, 0 sessions shed
}
