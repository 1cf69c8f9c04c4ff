package history

// Defaults of NewRecovery.
const (
	// DefaultMaxBuffer is how many live messages a Recovery holds while
	// its history read is under way: a read takes milliseconds, during
	// which a busy room publishes a handful; a thousand leaves room for
	// a slow Redis and bounds what one subscription holds at one
	// replay's worth.
	DefaultMaxBuffer = 1000
	// DefaultMaxBufferBytes bounds the bytes of those messages: 4 MiB,
	// a session's outbound queue (the server's DefaultOutboundBytes),
	// which is where they go next; holding more than it takes would
	// only close the session as a slow consumer later.
	DefaultMaxBufferBytes = 4 << 20
)

// Message is a message with its position, as delivered: live from the
// broker (the frame's offset and epoch) or replayed from history.
type Message struct {
	Offset uint64
	Epoch  string
	Data   []byte
}

// Step is what a Recovery tells its subscription to do after one event.
type Step struct {
	// Emit are the messages to deliver now, in order.
	Emit []Message
	// Decided is set on the one step that settles the recovery:
	// Recovered and Reason then go on the SUBSCRIBE's RECEIPT and on
	// the first message delivered.
	Decided   bool
	Recovered bool
	Reason    Reason
	// Dropped counts messages not delivered because they were already
	// (a live message the replay held too).
	Dropped int
	// Gap is set when, after the recovery was settled, a live message
	// skipped offsets or came in another epoch: it is delivered, but
	// the subscription missed something (Reason says what) and should
	// recover again from the offset before it.
	Gap bool
}

// Recovery splices a replay and live delivery into one stream without
// gap or duplicate, for one subscription. The subscription registers for
// live messages first and hands each to Live; meanwhile it reads the
// history (a read that began after the registration, see Reader) and
// hands the Result to Apply. Until Apply, live messages are held, up to
// MaxBuffer; Apply emits the replay, then the held messages it did not
// contain, and from then on Live emits each message in offset order,
// dropping those already emitted.
//
// The model: every message published after the registration reaches
// Live, and every message published before the read began is in the
// read, so the two overlap and their union has no hole. What breaks it
// is reported, never skipped silently: held messages past the buffer's
// bounds (ReasonOverrun, settled at once; live delivery continues), an
// epoch or offset that does not follow (Gap).
//
// A Recovery is pure logic with no clock and no lock: its subscription
// calls it from one goroutine at a time.
type Recovery struct {
	maxBuffer int
	maxBytes  int
	settled   bool
	held      []Message
	heldBytes int
	// next is the position the next emitted message must have once
	// settled; next.Epoch is empty until an epoch is known, and
	// next.Offset zero when any offset may come first.
	next Position
}

// NewRecovery returns a Recovery that holds at most maxBuffer live
// messages of at most maxBytes bytes of Data in all before Apply; below
// 1 means DefaultMaxBuffer and DefaultMaxBufferBytes.
func NewRecovery(maxBuffer, maxBytes int) *Recovery {
	if maxBuffer < 1 {
		maxBuffer = DefaultMaxBuffer
	}
	if maxBytes < 1 {
		maxBytes = DefaultMaxBufferBytes
	}
	return &Recovery{maxBuffer: maxBuffer, maxBytes: maxBytes}
}

// Settled reports whether Apply (or an overrun) settled the recovery.
func (r *Recovery) Settled() bool { return r.settled }

// Live takes one live message, in the order the broker delivered them.
func (r *Recovery) Live(m Message) Step {
	if !r.settled {
		if len(r.held) < r.maxBuffer && r.heldBytes+len(m.Data) <= r.maxBytes {
			r.held = append(r.held, m)
			r.heldBytes += len(m.Data)
			return Step{}
		}
		// The replay cannot be spliced any more: say so at once and go
		// live from here. What was held is delivered; what the replay
		// would have added is not.
		emit := append(r.held, m)
		r.held, r.heldBytes = nil, 0
		r.settled = true
		r.next = Position{Offset: m.Offset + 1, Epoch: m.Epoch}
		return Step{Emit: emit, Decided: true, Reason: ReasonOverrun}
	}
	return r.follow(m)
}

// follow delivers m after the recovery is settled.
func (r *Recovery) follow(m Message) Step {
	switch {
	case r.next.Epoch == "":
		// The first epoch seen. A read that found no history at all
		// (next is offset 1) is followed by the epoch's first message.
		want := r.next.Offset
		r.next = Position{Offset: m.Offset + 1, Epoch: m.Epoch}
		if want != 0 && m.Offset != want {
			return Step{Emit: []Message{m}, Gap: true, Reason: ReasonGap}
		}
		return Step{Emit: []Message{m}}
	case m.Epoch != r.next.Epoch:
		// A new epoch: continuity is what it says was lost.
		r.next = Position{Offset: m.Offset + 1, Epoch: m.Epoch}
		return Step{Emit: []Message{m}, Gap: true, Reason: ReasonEpochChanged}
	case m.Offset < r.next.Offset:
		return Step{Dropped: 1}
	case m.Offset > r.next.Offset:
		r.next.Offset = m.Offset + 1
		return Step{Emit: []Message{m}, Gap: true, Reason: ReasonGap}
	}
	r.next.Offset++
	return Step{Emit: []Message{m}}
}

// Apply takes the history's Result (from Since, or Reader) and settles
// the recovery: it emits the replay, if any, then the held live
// messages that follow it. A Result that did not recover emits only the
// held messages. Apply after the recovery settled (an overrun) emits
// nothing more and reports nothing new.
func (r *Recovery) Apply(res Result) Step {
	if r.settled {
		return Step{}
	}
	r.settled = true
	st := Step{Decided: true, Recovered: res.Recovered, Reason: res.Reason}
	held := r.held
	r.held, r.heldBytes = nil, 0
	if len(res.Entries) > 0 {
		st.Emit = make([]Message, 0, len(res.Entries)+len(held))
		for _, e := range res.Entries {
			st.Emit = append(st.Emit, Message{Offset: e.Offset, Epoch: res.Next.Epoch, Data: e.Data})
		}
	}
	if res.Recovered || res.Reason == ReasonNoEpoch {
		// Live continues exactly where the read ended.
		r.next = res.Next
	}
	for _, m := range held {
		s := r.follow(m)
		st.Emit = append(st.Emit, s.Emit...)
		st.Dropped += s.Dropped
		if s.Gap && st.Recovered {
			// The live side does not continue the read: a message
			// between them was lost, or the epoch changed since.
			st.Recovered, st.Reason = false, s.Reason
		}
	}
	return st
}
