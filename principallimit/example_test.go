package principallimit_test

import (
	"fmt"
	"time"

	"github.com/stompgate/stompgate/interceptor"
	"github.com/stompgate/stompgate/principallimit"
	"github.com/stompgate/stompgate/stompframe"
)

// A principal's sessions share one limit, and a destination rule gives
// its destinations a limit of their own, counted apart.
func ExampleStage() {
	l, err := principallimit.New(principallimit.Config{Limit: 3}) // no Redis: this instance's count
	if err != nil {
		panic(err)
	}
	defer l.Close()
	st, err := principallimit.NewStage(principallimit.StageConfig{
		Limiter: l,
		LimitFor: func(dest string) (string, int, time.Duration, bool) {
			if dest == "/topic/lobby.ready" {
				return "lobby", 1, 10 * time.Second, true
			}
			return "", 0, 0, false // the global limit
		},
	})
	if err != nil {
		panic(err)
	}
	chain := interceptor.NewChain(nil, st)
	alice := []*interceptor.Session{
		{ID: "tab", Principal: &interceptor.Principal{Name: "alice"}},
		{ID: "phone", Principal: &interceptor.Principal{Name: "alice"}},
	}
	now := time.Now()
	for i, dest := range []string{"/topic/chat", "/topic/chat", "/topic/chat", "/topic/chat", "/topic/lobby.ready", "/topic/lobby.ready"} {
		f := &stompframe.Frame{Command: stompframe.CommandSend}
		f.Add("destination", dest)
		s := alice[i%2]
		fmt.Println(s.ID, dest, chain.Handle(s, f, now).Outcome)
	}
	// Output:
	// tab /topic/chat pass
	// phone /topic/chat pass
	// tab /topic/chat pass
	// phone /topic/chat drop
	// tab /topic/lobby.ready pass
	// phone /topic/lobby.ready drop
}
