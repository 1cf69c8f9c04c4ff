package jwtauth

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/stompframe"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fixed instant tests measure their offsets from.
var t0 = time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

// frame builds a frame from a command and name, value pairs.
func frame(cmd string, kv ...string) *stompframe.Frame {
	f := &stompframe.Frame{Command: cmd}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return f
}
