package sessioncap_test

import (
	"context"
	"fmt"

	"github.com/stompgate/stompgate/sessioncap"
)

// ExampleLimiter caps one principal at two sessions in process memory:
// the third is refused until one of the first two is released.
func ExampleLimiter() {
	l, err := sessioncap.New(sessioncap.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	ctx := context.Background()
	first, d1, _ := l.Acquire(ctx, sessioncap.ScopePrincipal, "alice", 2)
	_, d2, _ := l.Acquire(ctx, sessioncap.ScopePrincipal, "alice", 2)
	_, d3, _ := l.Acquire(ctx, sessioncap.ScopePrincipal, "alice", 2)
	fmt.Println(d1.Allowed, d2.Allowed, d3.Allowed, d3.Held, d3.Store)
	l.Release(first)
	_, d4, _ := l.Acquire(ctx, sessioncap.ScopePrincipal, "alice", 2)
	fmt.Println(d4.Allowed)
	// Output:
	// true true false 2 memory
	// true
}
