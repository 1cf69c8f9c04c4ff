package poll

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var errNotYet = errors.New("not yet")

// after returns a condition that holds from its n-th call on, and a
// pointer to how often it was called.
func after(n int) (func() error, *int) {
	calls := 0
	return func() error {
		calls++
		if calls >= n {
			return nil
		}
		return fmt.Errorf("call %d: %w", calls, errNotYet)
	}, &calls
}

func TestWait(t *testing.T) {
	errGone := errors.New("gone")
	tests := []struct {
		name      string
		timeout   time.Duration
		cond      func(calls int) error
		wantErr   error
		wantCalls int
	}{
		{"holds at once", time.Minute, func(int) error { return nil }, nil, 1},
		{"holds on the third call", time.Minute, func(n int) error {
			if n < 3 {
				return errNotYet
			}
			return nil
		}, nil, 3},
		{"never holds, no time", 0, func(int) error { return errNotYet }, errNotYet, 1},
		{"stopped", time.Minute, func(n int) error { return Stop(errGone) }, errGone, 1},
		{"stopped on the second call", time.Minute, func(n int) error {
			if n < 2 {
				return errNotYet
			}
			return fmt.Errorf("wrapped: %w", Stop(errGone))
		}, errGone, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Wait(tt.timeout, func() error {
				calls++
				return tt.cond(calls)
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
			if calls != tt.wantCalls {
				t.Errorf("got %d calls, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// The error of a stopped wait is the one given to Stop, not a wrapper.
func TestStopUnwraps(t *testing.T) {
	errGone := errors.New("gone")
	if got := Wait(time.Minute, func() error { return Stop(errGone) }); got != errGone {
		t.Errorf("got %v (%T), want errGone itself", got, got)
	}
	if got := Stop(nil); got != nil {
		t.Errorf("Stop(nil) = %v, want nil", got)
	}
}

// Wait keeps calling until the condition holds, and returns the last
// error when the time is up.
func TestWaitLastError(t *testing.T) {
	cond, calls := after(1 << 30)
	err := Wait(3*Interval, cond)
	if !errors.Is(err, errNotYet) {
		t.Fatalf("got %v, want errNotYet", err)
	}
	if want := fmt.Sprintf("call %d: not yet", *calls); err.Error() != want {
		t.Errorf("got error %q, want the last call's %q", err, want)
	}
	if *calls < 2 {
		t.Errorf("got %d calls, want at least 2", *calls)
	}
}

// fakeTB records a fatal failure instead of ending the goroutine.
type fakeTB struct {
	testing.TB
	fatal string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
}

func TestUntil(t *testing.T) {
	ok, _ := after(2)
	tests := []struct {
		name      string
		cond      func() error
		wantFatal string
	}{
		{"holds", ok, ""},
		{"times out", func() error { return errNotYet }, "after 0s: not yet"},
		{"stopped", func() error { return Stop(errors.New("gone")) }, "after 0s: gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			timeout := time.Duration(0)
			if tt.wantFatal == "" {
				timeout = time.Minute
			}
			Until(tb, timeout, tt.cond)
			if tb.fatal != tt.wantFatal {
				t.Errorf("got failure %q, want %q", tb.fatal, tt.wantFatal)
			}
		})
	}
}

func ExampleWait() {
	calls := 0
	err := Wait(time.Minute, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("%d calls so far", calls)
		}
		return nil
	})
	fmt.Println(err, calls)

	err = Wait(time.Minute, func() error { return Stop(errors.New("server exited")) })
	fmt.Println(err)
	// Output:
	// <nil> 3
	// server exited
}
