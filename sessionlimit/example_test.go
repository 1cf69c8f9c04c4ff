package sessionlimit_test

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/sessionlimit"
)

// A fixed window bounds each window, so a burst on both sides of an edge
// passes nearly twice the limit in a short time.
func ExampleFixedWindow() {
	l := sessionlimit.NewFixedWindow(5, time.Second)
	t0 := time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

	passed := func(at time.Duration, n int) int {
		c := 0
		for range n {
			if l.AllowAt(t0.Add(at)) {
				c++
			}
		}
		return c
	}
	fmt.Println("t0:      ", passed(0, 1), "passed, the window opens")
	fmt.Println("t0+900ms:", passed(900*time.Millisecond, 5), "of 5 passed")
	fmt.Println("t0+1s:   ", passed(time.Second, 5), "of 5 passed, a new window opens")
	fmt.Println("t0+1.5s: ", passed(1500*time.Millisecond, 5), "of 5 passed")
	// Output:
	// t0:       1 passed, the window opens
	// t0+900ms: 4 of 5 passed
	// t0+1s:    5 of 5 passed, a new window opens
	// t0+1.5s:  0 of 5 passed
}

// The sliding counter holds the same timeline to the limit: at the edge the
// previous window still counts in full.
func ExampleSlidingWindow() {
	l := sessionlimit.NewSlidingWindow(5, time.Second)
	t0 := time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

	passed := func(at time.Duration, n int) int {
		c := 0
		for range n {
			if l.AllowAt(t0.Add(at)) {
				c++
			}
		}
		return c
	}
	fmt.Println("t0:      ", passed(0, 1), "passed")
	fmt.Println("t0+900ms:", passed(900*time.Millisecond, 5), "of 5 passed")
	fmt.Println("t0+1s:   ", passed(time.Second, 5), "of 5 passed")
	fmt.Println("t0+1.5s: ", passed(1500*time.Millisecond, 5), "of 5 passed")
	// Output:
	// t0:       1 passed
	// t0+900ms: 4 of 5 passed
	// t0+1s:    0 of 5 passed
	// t0+1.5s:  2 of 5 passed
}

// A token bucket passes a burst of its capacity, then the refill rate.
func ExampleTokenBucket() {
	l := sessionlimit.NewTokenBucket(5, time.Second) // one token per 200ms
	t0 := time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

	for _, at := range []time.Duration{0, 0, 0, 0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond} {
		fmt.Printf("t0+%v: %v\n", at, l.AllowAt(t0.Add(at)))
	}
	// Output:
	// t0+0s: true
	// t0+0s: true
	// t0+0s: true
	// t0+0s: true
	// t0+0s: true
	// t0+0s: false
	// t0+100ms: false
	// t0+200ms: true
}

// A server validates its Config once and makes one limiter per session.
func ExampleNewFactory() {
	f, err := sessionlimit.NewFactory(sessionlimit.Config{}) // 20 per second, fixed window
	if err != nil {
		fmt.Println(err)
		return
	}
	session := f.New()
	now := time.Now()
	passed := 0
	for range 25 {
		if session.AllowAt(now) {
			passed++
		}
	}
	fmt.Println(passed, "of 25 passed")
	// Output: 20 of 25 passed
}

// A bad setting is reported by name.
func ExampleNew() {
	_, err := sessionlimit.New(sessionlimit.Config{Window: -time.Second})
	fmt.Println(err)
	// Output: sessionlimit: Window -1s is negative
}

func ExampleParseAlgorithm() {
	for _, s := range []string{"", "sliding", "leaky"} {
		a, err := sessionlimit.ParseAlgorithm(s)
		fmt.Printf("%q: %q %v\n", s, a, err)
	}
	// Output:
	// "": "fixed" <nil>
	// "sliding": "sliding" <nil>
	// "leaky": "" sessionlimit: Algorithm "leaky" is not one of fixed, sliding, token
}
