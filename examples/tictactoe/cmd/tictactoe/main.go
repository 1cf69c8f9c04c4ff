// Command tictactoe is the example game backend: it reads wsserver's app
// stream with a consumer group and answers through its server API.
//
//	wsserver -redis-url redis://127.0.0.1:6379/0 -api-key secret
//	tictactoe -redis-url redis://127.0.0.1:6379/0 -api-url http://127.0.0.1:9090 -api-key secret
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

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
	apiURL := flag.String("api-url", "http://127.0.0.1:9090", "wsserver's admin listener")
	apiKey := flag.String("api-key", os.Getenv("WSSERVER_API_KEY"), "wsserver's -api-key (default $WSSERVER_API_KEY)")
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
	slog.Info("tictactoe backend running", "stream", *stream, "group", *group)
	return b.Run(ctx)
}
