package interceptor

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stompgate/stompgate/outcome"
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

// fixedStage answers the same Result for every frame and logs its name
// each time it is called.
type fixedStage struct {
	name string
	res  Result
	log  *[]string
}

func (st *fixedStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	if st.log != nil {
		*st.log = append(*st.log, st.name)
	}
	return st.res
}

// funcStage adapts a function to Stage.
type funcStage func(s *Session, f *stompframe.Frame, now time.Time) Result

func (fn funcStage) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	return fn(s, f, now)
}

// dropEvent is one FrameDropped call.
type dropEvent struct{ command, reason string }

// recorder is an Observer that keeps every call.
type recorder struct {
	received []string
	dropped  []dropEvent
	passed   []string
}

func (r *recorder) FrameReceived(command string) { r.received = append(r.received, command) }

func (r *recorder) FrameDropped(command string, reason *outcome.Reason) {
	r.dropped = append(r.dropped, dropEvent{command, reason.String()})
}

func (r *recorder) FramePassed(command string) { r.passed = append(r.passed, command) }

// checkCounts fails the test unless s's counters are want.
func checkCounts(t *testing.T, s *Session, want Counts) {
	t.Helper()
	if got := s.Counts(); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
}
