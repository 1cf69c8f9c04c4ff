package fallback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
)

// TestHealth steps the judgement of Redis through round trips.
func TestHealth(t *testing.T) {
	h := NewHealth(50*time.Millisecond, 3)
	refused := errors.New("dial tcp: connection refused")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i, step := range []struct {
		parent                   context.Context
		took                     time.Duration
		err                      error
		wantBroken, wantTimedOut bool
	}{
		{nil, 50 * time.Millisecond, context.DeadlineExceeded, false, false},
		{nil, 60 * time.Millisecond, fmt.Errorf("i/o: %w", context.DeadlineExceeded), false, false},
		{gone, time.Millisecond, refused, false, false},                       // the caller left: nothing learnt
		{nil, 300 * time.Millisecond, context.DeadlineExceeded, false, false}, // noticed late: this server's CPU
		{nil, 51 * time.Millisecond, context.DeadlineExceeded, false, true},
		{nil, time.Millisecond, nil, false, false},
		{nil, time.Millisecond, refused, true, false},
		{nil, 300 * time.Millisecond, context.DeadlineExceeded, true, false},
		{nil, time.Millisecond, nil, false, false},
	} {
		h.RoundTrip(step.parent, step.took, step.err)
		if h.Broken() != step.wantBroken || h.TimedOut() != step.wantTimedOut || h.Failing() != (step.wantBroken || step.wantTimedOut) {
			t.Errorf("step %d: after %v, Broken %v, TimedOut %v; want %v, %v",
				i, step.err, h.Broken(), h.TimedOut(), step.wantBroken, step.wantTimedOut)
		}
	}
	if d := NewHealth(time.Second, 0); d.timeoutsToFail != DefaultTimeoutsToFail {
		t.Errorf("NewHealth(_, 0) counts to %d, want DefaultTimeoutsToFail", d.timeoutsToFail)
	}
}

// pinger is a Ping that blocks until the test answers it.
type pinger struct {
	mu     sync.Mutex
	calls  int
	answer chan error
}

func (p *pinger) ping(ctx context.Context) error {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	select {
	case err := <-p.answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pinger) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// confirmations records Config.Confirmed.
type confirmations struct {
	mu  sync.Mutex
	got []bool
}

func (c *confirmations) add(ok bool) { c.mu.Lock(); c.got = append(c.got, ok); c.mu.Unlock() }
func (c *confirmations) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprint(c.got)
}

// TestSwitchConfirmsTimeouts steps a Switch with a Health through
// timeouts: they start one confirmation PING, not fallback mode; a PING
// that answers voids them, one that fails starts fallback mode, and a
// refused connection starts it at once.
func TestSwitchConfirmsTimeouts(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	h := NewHealth(50*time.Millisecond, 2)
	p := &pinger{answer: make(chan error)}
	conf := &confirmations{}
	ev := &events{}
	s := New(Config{
		RetryInterval: time.Second,
		ProbeInterval: -1,
		Health:        h,
		Ping:          p.ping,
		Name:          "test",
		Logger:        slog.New(slog.DiscardHandler),
		Changed: func(active bool) {
			if active {
				ev.mu.Lock()
				ev.entered++
				ev.mu.Unlock()
			}
		},
		StoreError: func(error) {},
		Confirmed:  conf.add,
		Now:        func() time.Time { return t0 },
	})
	t.Cleanup(s.Close)
	timeout := fmt.Errorf("i/o: %w", context.DeadlineExceeded)
	timedOut := func() error {
		h.RoundTrip(context.Background(), 50*time.Millisecond, timeout)
		return timeout
	}

	// One timeout: a hiccup, answered locally, nothing to confirm.
	if got, err := s.Try(context.Background(), t0, timedOut); got != Local || err != nil || p.count() != 0 {
		t.Fatalf("one timeout: Try = %v, %v, %d PINGs; want Local, nil, 0", got, err, p.count())
	}
	// Two in a row: confirmation, still Local; more timeouts while it
	// runs start no second one.
	for i := range 3 {
		if got, _ := s.Try(context.Background(), t0, timedOut); got != Local || s.Active() {
			t.Fatalf("timeout %d in a row: Try = %v, active %v; want Local, not active", i+2, got, s.Active())
		}
	}
	poll.Until(t, 5*time.Second, func() error {
		if p.count() != 1 {
			return fmt.Errorf("%d PINGs, want 1", p.count())
		}
		return nil
	})
	p.answer <- nil
	poll.Until(t, 5*time.Second, func() error {
		if conf.String() != "[true]" {
			return fmt.Errorf("confirmations %v, want [true]", conf)
		}
		return nil
	})
	if s.Active() || h.TimedOut() {
		t.Fatalf("after an answered PING: active %v, TimedOut %v; want neither", s.Active(), h.TimedOut())
	}

	// Again; the PING times out, but another round trip was answered
	// meanwhile: Redis is alive, the PING's answer was read late.
	for range 2 {
		_, _ = s.Try(context.Background(), t0, timedOut)
	}
	poll.Until(t, 5*time.Second, func() error {
		if p.count() != 2 {
			return fmt.Errorf("%d PINGs, want 2", p.count())
		}
		return nil
	})
	h.RoundTrip(context.Background(), time.Millisecond, nil)
	p.answer <- timeout
	poll.Until(t, 5*time.Second, func() error {
		if conf.String() != "[true true]" {
			return fmt.Errorf("confirmations %v, want [true true]", conf)
		}
		return nil
	})
	if s.Active() {
		t.Fatal("in fallback after a PING timed out while Redis answered another round trip")
	}

	// Again, and this time the PING fails with nothing answered: fallback
	// mode.
	for range 2 {
		_, _ = s.Try(context.Background(), t0, timedOut)
	}
	poll.Until(t, 5*time.Second, func() error {
		if p.count() != 3 {
			return fmt.Errorf("%d PINGs, want 3", p.count())
		}
		return nil
	})
	p.answer <- timeout
	poll.Until(t, 5*time.Second, func() error {
		if !s.Active() {
			return errors.New("not in fallback after a failed confirmation")
		}
		return nil
	})
	if conf.String() != "[true true false]" {
		t.Errorf("confirmations %v, want [true true false]", conf)
	}
	s.Succeeded()

	// A refused connection is evidence enough: fallback at once, no PING.
	refused := errors.New("dial tcp: connection refused")
	got, _ := s.Try(context.Background(), t0.Add(time.Hour), func() error {
		h.RoundTrip(context.Background(), time.Millisecond, refused)
		return refused
	})
	if got != Fallback || !s.Active() || p.count() != 3 {
		t.Errorf("refused: Try = %v, active %v, %d PINGs; want Fallback, active, 3", got, s.Active(), p.count())
	}
	if ev.entered != 2 {
		t.Errorf("fallback mode entered %d times, want 2", ev.entered)
	}
}

// Close ends a confirmation under way, which then proves nothing.
func TestSwitchCloseEndsConfirmation(t *testing.T) {
	h := NewHealth(50*time.Millisecond, 1)
	p := &pinger{answer: make(chan error)}
	s := New(Config{
		RetryInterval: time.Second, ProbeInterval: -1, Health: h, Ping: p.ping,
		Name: "test", Logger: slog.New(slog.DiscardHandler),
		Changed: func(bool) {}, StoreError: func(error) {},
	})
	h.RoundTrip(context.Background(), 50*time.Millisecond, context.DeadlineExceeded)
	if s.Judge(time.Now(), context.DeadlineExceeded) {
		t.Fatal("Judge on timeouts alone = true, want a confirmation first")
	}
	poll.Until(t, 5*time.Second, func() error {
		if p.count() != 1 {
			return fmt.Errorf("%d PINGs, want 1", p.count())
		}
		return nil
	})
	s.Close()
	if s.Active() {
		t.Error("Active after Close cut the confirmation short, want false")
	}
	s.Close()
}
