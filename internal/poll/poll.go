// Package poll waits for a condition that another goroutine or process
// makes true: a server answering, a counter reaching a value, a metric
// appearing. Tests use it where no event can be waited for directly.
//
// A condition is a func() error: nil when it holds, and otherwise an
// error that says what is still missing, so that a timeout reports why.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Interval is the pause between two calls of a condition: short enough
// that a wait ends soon after the condition holds, long enough that
// polling does not load the shared test machine.
const Interval = 10 * time.Millisecond

// Wait calls cond until it returns nil, returns an error made by Stop, or
// timeout has passed, pausing Interval between calls. It returns nil, the
// error given to Stop, or cond's last error. cond is called at least once,
// even with a timeout of zero or less.
func Wait(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var s stopError
		if errors.As(err, &s) {
			return s.err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(Interval)
	}
}

// Stop marks err as final: Wait returns it at once instead of calling the
// condition again. A condition returns Stop(err) when it can no longer
// hold, such as when the process it waits for has exited. Stop(nil)
// returns nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopError{err}
}

// stopError carries an error given to Stop.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Until is Wait for tests: it returns once cond returns nil, and
// otherwise fails the test with cond's last error, saying how long it
// waited.
func Until(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	if err := Wait(timeout, cond); err != nil {
		tb.Fatalf("after %v: %v", timeout, err)
	}
}
