package relay_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/relay"
	"github.com/stompgate/stompgate/server"
)

// Wiring one instance: the relay is the broker's Hooks and the server's
// Relay. New contacts no server; Start begins relaying.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()

	r, err := relay.New(relay.Config{Client: client})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := broker.NewWithConfig(broker.Config{Hooks: r})
	if err := r.Start(b); err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close() // after the server's Shutdown: queued messages go out

	srv, err := server.New(server.Config{Broker: b, Relay: r})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = srv // serve it: http.Handle("/ws", srv)

	fmt.Println(r.Channel("/topic/room.1"))
	// Output: stompgate:topic:{/topic/room.1}
}
