package client_test

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/loadtest/internal/client"
)

// A client whose connection dropped waits a random part of a ceiling
// that doubles with each failure, or what the server's Retry-After asked
// plus less than a second. Rand is fixed here to show the arithmetic.
func ExampleBackoff() {
	draws := []float64{0.5, 0.5, 0.5, 0.25}
	b := client.Backoff{Rand: func() float64 {
		r := draws[0]
		draws = draws[1:]
		return r
	}}
	fmt.Println(b.Next(0))               // half of the first ceiling, 1 s
	fmt.Println(b.Next(0))               // half of 2 s
	fmt.Println(b.Next(3 * time.Second)) // a 429 said Retry-After: 3
	b.Reset()                            // a connection stayed up
	fmt.Println(b.Next(0))               // a quarter of 1 s again
	// Output:
	// 500ms
	// 1s
	// 3.5s
	// 250ms
}
