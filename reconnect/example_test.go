package reconnect_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stompgate/stompgate/reconnect"
)

// A Counter with the zero Config counts in process memory, 15 CONNECTs a
// minute; the 16th within the minute is over the limit, and a new window
// starts a minute after the first.
func ExampleCounter() {
	c, err := reconnect.New(reconnect.Config{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var last reconnect.Count
	for i := range 16 {
		last, _ = c.Count(context.Background(), reconnect.ScopeAddress, "192.0.2.7", t0.Add(time.Duration(i)*time.Second))
	}
	fmt.Println(last.N, last.Over, last.Store)
	next, _ := c.Count(context.Background(), reconnect.ScopeAddress, "192.0.2.7", t0.Add(time.Minute))
	fmt.Println(next.N, next.Over)
	// Output:
	// 16 true memory
	// 1 false
}
