package interceptor

import (
	"time"

	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Outcome is what a stage decided about one frame.
type Outcome uint8

const (
	// Pass hands the frame to the next stage, or to the broker after the
	// last stage.
	Pass Outcome = iota
	// Drop stops the chain silently: nothing is sent back, not even a
	// RECEIPT, and the session stays open.
	Drop
	// Reject stops the chain and ends the session with an ERROR frame and
	// a close.
	Reject
)

// String returns "pass", "drop" or "reject".
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	case Reject:
		return "reject"
	}
	return "unknown"
}

// Result is a stage's answer for one frame. It is returned by value so the
// per-frame path does not allocate; build it with Continue, DropFrame or
// RejectFrame.
type Result struct {
	// Outcome is Pass, Drop or Reject.
	Outcome Outcome
	// Reason says why a Drop or Reject stopped the frame (see
	// package outcome); a Reject ends the session with Reason.Close().
	Reason *outcome.Reason
	// Message is the ERROR frame's message header for a Reject.
	Message string
	// Detail is the ERROR frame's body for a Reject; may be empty.
	Detail string
	// RetryAfter, for a Reject, is when a new session can pass (a ban's
	// end, a store back): the ERROR frame then carries a retry-after
	// header of whole seconds drawn at random above it. Zero: the
	// refusal gives no time.
	RetryAfter time.Duration
}

// Continue is the Result that passes a frame on.
func Continue() Result { return Result{} }

// DropFrame returns a Result that drops the frame silently, counted under
// reason.
func DropFrame(reason *outcome.Reason) Result { return Result{Outcome: Drop, Reason: reason} }

// RejectFrame returns a Result that ends the session with an ERROR frame
// whose message header is message and whose body is detail.
func RejectFrame(reason *outcome.Reason, message, detail string) Result {
	return Result{Outcome: Reject, Reason: reason, Message: message, Detail: detail}
}

// RejectRetry is RejectFrame for a refusal that knows when a retry can
// pass: the ERROR frame also carries retry-after (see Result.RetryAfter).
func RejectRetry(reason *outcome.Reason, message, detail string, retryAfter time.Duration) Result {
	return Result{Outcome: Reject, Reason: reason, Message: message, Detail: detail, RetryAfter: retryAfter}
}

// Stage is one step of the inbound path. Handle is called on the session's
// reader goroutine, one frame at a time, so a stage may keep per-session
// state in the Session without locking; state shared between sessions
// needs its own synchronisation. now is the time the frame was read.
//
// The frame is only valid during the call: a stage that keeps it must
// Clone it.
type Stage interface {
	Handle(s *Session, f *stompframe.Frame, now time.Time) Result
}

// Observer is told about every frame that enters the chain and what became
// of it, so that for every session and in total
// received = passed + dropped(reason) holds whatever the stages are (SENDs
// held in an open transaction are counted when it ends: passed at a COMMIT
// that fits the limits, dropped otherwise). The Chain is the one place
// that counts; a nil Observer is allowed.
type Observer interface {
	FrameReceived(command string)
	FramePassed(command string)
	FrameDropped(command string, reason *outcome.Reason)
}

// Chain runs stages in order until one of them does not pass the frame.
// The order is fixed at construction. A Chain is safe for concurrent use
// by many sessions if its stages are.
type Chain struct {
	stages   []Stage
	observer Observer
}

// NewChain returns a chain that runs stages in the given order and reports
// every frame's outcome to obs (which may be nil). The server's standard
// order is Principal, then SessionLimit; stages a program adds go after
// them, so that they only see identified frames within the limit.
func NewChain(obs Observer, stages ...Stage) *Chain {
	return &Chain{stages: append([]Stage(nil), stages...), observer: obs}
}

// Stages returns a copy of the chain's stages in order.
func (c *Chain) Stages() []Stage { return append([]Stage(nil), c.stages...) }

// Handle passes f through every stage. It counts the frame on s as
// received, then as passed when every stage passed it, or as dropped (with
// the stage's reason) when a stage drops or rejects it. A SEND inside a
// transaction that every stage passed is held as pending instead: the
// caller buffers it and settles it with Commit or Discard.
func (c *Chain) Handle(s *Session, f *stompframe.Frame, now time.Time) Result {
	s.received.Add(1)
	if c.observer != nil {
		c.observer.FrameReceived(f.Command)
	}
	for _, st := range c.stages {
		r := st.Handle(s, f, now)
		if r.Outcome == Pass {
			continue
		}
		s.dropped.Add(1)
		if c.observer != nil {
			c.observer.FrameDropped(f.Command, r.Reason)
		}
		return r
	}
	if InTransaction(f) {
		s.pending.Add(1)
		return Result{}
	}
	s.passed.Add(1)
	if c.observer != nil {
		c.observer.FramePassed(f.Command)
	}
	return Result{}
}

// InTransaction reports whether f is a SEND inside a transaction: the
// chain passes it on as pending, and stages that charge SENDs against a
// limit charge it at COMMIT rather than on arrival (see Committer).
func InTransaction(f *stompframe.Frame) bool {
	if f.Command != stompframe.CommandSend {
		return false
	}
	_, ok := f.Lookup("transaction")
	return ok
}

// Committer is implemented by a stage that charges a transaction's SENDs
// when the transaction commits, all n together, rather than one by one as
// they arrive. A COMMIT therefore never releases more than the stage's
// limit allows at that moment, however long the transaction was filled.
type Committer interface {
	// Commit answers Pass to let all n SENDs through, Drop to drop them
	// all silently, or Reject to end the session.
	Commit(s *Session, n int, now time.Time) Result
}

// Commit settles the n pending SENDs of a transaction whose COMMIT passed
// the chain: every Committer stage is asked in order, and the SENDs are
// counted as passed when all of them pass, or all as dropped under the
// reason of the first stage that does not. The caller publishes them only
// when the result passes.
func (c *Chain) Commit(s *Session, n int, now time.Time) Result {
	if n <= 0 {
		return Result{}
	}
	s.pending.Add(^uint64(n - 1))
	for _, st := range c.stages {
		cm, ok := st.(Committer)
		if !ok {
			continue
		}
		r := cm.Commit(s, n, now)
		if r.Outcome == Pass {
			continue
		}
		s.dropped.Add(uint64(n))
		if c.observer != nil {
			for range n {
				c.observer.FrameDropped(stompframe.CommandSend, r.Reason)
			}
		}
		return r
	}
	s.passed.Add(uint64(n))
	if c.observer != nil {
		for range n {
			c.observer.FramePassed(stompframe.CommandSend)
		}
	}
	return Result{}
}

// Discard counts the n pending SENDs of a transaction that ends without
// COMMIT (ABORT, or the session closed) as dropped with outcome.DropAborted.
func (c *Chain) Discard(s *Session, n int) {
	if n <= 0 {
		return
	}
	s.pending.Add(^uint64(n - 1))
	s.dropped.Add(uint64(n))
	if c.observer != nil {
		for range n {
			c.observer.FrameDropped(stompframe.CommandSend, outcome.DropAborted)
		}
	}
}
