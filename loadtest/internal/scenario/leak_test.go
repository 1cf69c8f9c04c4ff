package scenario

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// go-stomp's server has no shutdown: its request loop and accept
		// loop run until the process ends.
		goleak.IgnoreAnyFunction("github.com/go-stomp/stomp/v3/server.(*requestProcessor).Serve"),
		goleak.IgnoreAnyFunction("github.com/go-stomp/stomp/v3/server.(*requestProcessor).Listen"),
	)
}
