// Command tictactoe is the example game backend: it reads wsserver's app
// stream with a consumer group and answers through its server API. It
// also serves the game's browser page (-web-addr), passing the page's
// WebSocket on to wsserver, so that two browser tabs are a game:
//
//	redis-server --port 6379 &
//	wsserver -redis-url redis://127.0.0.1:6379/0 -api-key secret &
//	tictactoe -redis-url redis://127.0.0.1:6379/0 -api-url http://127.0.0.1:8082 -api-key secret
//
// then open http://127.0.0.1:8081/ in two tabs and join the same game.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/appstream"
	"github.com/stompgate/stompgate/examples/tictactoe"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tictactoe:", err)
		os.Exit(1)
	}
}

func run() error {
	redisURL := flag.String("redis-url", "redis://127.0.0.1:6379/0", "wsserver's -redis-url")
	stream := flag.String("stream", appstream.DefaultStream, "wsserver's -app-stream")
	group := flag.String("group", "tictactoe", "consumer group")
	consumer := flag.String("consumer", "worker", "this worker's name in the group")
	apiURL := flag.String("api-url", "http://127.0.0.1:8082", "wsserver's admin listener")
	apiKey := flag.String("api-key", os.Getenv("WSSERVER_API_KEY"), "wsserver's -api-key (default $WSSERVER_API_KEY)")
	webAddr := flag.String("web-addr", "127.0.0.1:8081", "where the game's browser page is served (empty: no page)")
	wsServer := flag.String("ws-server", "http://127.0.0.1:8080", "wsserver's public listener, which the page's WebSocket is passed on to")
	wsPath := flag.String("ws-path", "/ws", "wsserver's -ws-path")
	flag.Parse()

	opt, err := redis.ParseURL(*redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	b, err := tictactoe.New(tictactoe.Config{
		Redis: rdb, Stream: *stream, Group: *group, Consumer: *consumer,
		Publisher: &tictactoe.APIClient{URL: *apiURL, Key: *apiKey},
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	webDone := make(chan error, 1)
	if *webAddr != "" {
		page, err := tictactoe.PageHandler(tictactoe.PageConfig{WSServer: *wsServer, WSPath: *wsPath})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *webAddr)
		if err != nil {
			return fmt.Errorf("-web-addr: %w", err)
		}
		// The page's files are small; a WebSocket passed on to wsserver
		// is hijacked, which clears these deadlines: wsserver's
		// heart-beats and pings bound it instead.
		srv := &http.Server{Handler: page, ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 16 << 10}
		go func() {
			err := srv.Serve(ln)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			webDone <- err
		}()
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		slog.Info("tictactoe page", "url", "http://"+ln.Addr().String()+"/", "ws_server", *wsServer)
	} else {
		webDone <- nil
	}
	slog.Info("tictactoe backend running", "stream", *stream, "group", *group)
	runErr := b.Run(ctx)
	stop()
	return errors.Join(runErr, <-webDone)
}
