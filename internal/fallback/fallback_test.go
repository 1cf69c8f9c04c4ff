package fallback

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
)

// events records a Switch's calls.
type events struct {
	mu                   sync.Mutex
	entered, left, fails int
}

func newSwitch(t *testing.T, ev *events, now func() time.Time, ping func(context.Context) error, probe time.Duration) *Switch {
	t.Helper()
	s := New(Config{
		RetryInterval: time.Second,
		ProbeInterval: probe,
		Now:           now,
		Ping:          ping,
		Name:          "test",
		Logger:        slog.New(slog.DiscardHandler),
		Changed: func(active bool) {
			ev.mu.Lock()
			if active {
				ev.entered++
			} else {
				ev.left++
			}
			ev.mu.Unlock()
		},
		StoreError: func(error) { ev.mu.Lock(); ev.fails++; ev.mu.Unlock() },
	})
	t.Cleanup(s.Close)
	return s
}

// TestSwitchPacesRetries steps through an outage at fixed instants: one
// call per RetryInterval may try Redis, fallback starts and ends once.
func TestSwitchPacesRetries(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ev := &events{}
	s := newSwitch(t, ev, func() time.Time { return t0 }, func(context.Context) error { return errors.New("down") }, -1)
	if !s.ShouldTry(t0) || s.Active() {
		t.Fatalf("before any failure: ShouldTry = false or Active = true")
	}
	s.Failed(t0, errors.New("down"))
	s.Failed(t0, errors.New("down again"))
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{{0, false}, {999 * time.Millisecond, false}, {time.Second, true}, {time.Second, false}, {2 * time.Second, true}} {
		if got := s.ShouldTry(t0.Add(step.at)); got != step.want {
			t.Fatalf("ShouldTry(t0+%v) = %v, want %v", step.at, got, step.want)
		}
	}
	s.Succeeded()
	s.Succeeded()
	if s.Active() || ev.entered != 1 || ev.left != 1 {
		t.Fatalf("active %v, entered %d, left %d; want false, 1, 1", s.Active(), ev.entered, ev.left)
	}
}

// TestSwitchProbeEndsFallback: with no call arriving, the probe finds
// Redis back and ends fallback mode; its goroutine then exits.
func TestSwitchProbeEndsFallback(t *testing.T) {
	var mu sync.Mutex
	up := false
	ev := &events{}
	s := newSwitch(t, ev, nil, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			return errors.New("down")
		}
		return nil
	}, 10*time.Millisecond)
	s.Failed(time.Now().Add(-time.Hour), errors.New("down"))
	poll.Until(t, 5*time.Second, func() error {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		if ev.fails == 0 {
			return errors.New("no failed probe yet")
		}
		return nil
	})
	mu.Lock()
	up = true
	mu.Unlock()
	poll.Until(t, 5*time.Second, func() error {
		if s.Active() {
			return errors.New("still in fallback")
		}
		return nil
	})
	s.Close()
	s.mu.Lock()
	probing := s.probing
	s.mu.Unlock()
	if probing {
		t.Fatalf("probe still marked running after Close")
	}
}

// TestSwitchTry steps one store's calls through an outage at fixed
// instants: a failure starts fallback mode and is reported, calls inside
// the RetryInterval skip Redis, a caller that gave up leaves the state
// alone, and a success ends the mode.
func TestSwitchTry(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ev := &events{}
	s := newSwitch(t, ev, func() time.Time { return t0 }, func(context.Context) error { return errors.New("down") }, -1)
	down := errors.New("down")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, step := range []struct {
		name       string
		ctx        context.Context
		at         time.Duration
		err        error // what the call returns
		wantCalled bool
		want       Outcome
		wantErr    error
		wantActive bool
		wantFails  int
	}{
		{"healthy", context.Background(), 0, nil, true, Answered, nil, false, 0},
		{"failure", context.Background(), 0, down, true, Fallback, nil, true, 1},
		{"not due", context.Background(), 999 * time.Millisecond, nil, false, Fallback, nil, true, 1},
		{"caller gone", ended, time.Second, down, true, Answered, context.Canceled, true, 1},
		{"recovered", context.Background(), 2 * time.Second, nil, true, Answered, nil, false, 1},
	} {
		called := false
		got, err := s.Try(step.ctx, t0.Add(step.at), func() error { called = true; return step.err })
		ev.mu.Lock()
		fails := ev.fails
		ev.mu.Unlock()
		if called != step.wantCalled || got != step.want || err != step.wantErr || s.Active() != step.wantActive || fails != step.wantFails {
			t.Fatalf("%s: Try(t0+%v) called %v = %v, %v; active %v, %d errors; want called %v, %v, %v, active %v, %d errors",
				step.name, step.at, called, got, err, s.Active(), fails,
				step.wantCalled, step.want, step.wantErr, step.wantActive, step.wantFails)
		}
	}
	if ev.entered != 1 || ev.left != 1 {
		t.Fatalf("entered %d, left %d; want 1, 1", ev.entered, ev.left)
	}
}
