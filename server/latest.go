package server

import "github.com/stompgate/stompgate/broker"

// Latest-value delivery (DestinationOptions.Latest) is for destinations
// that carry state, such as a game's, where only the newest message
// matters: a subscriber of such a destination holds at most one of its
// MESSAGEs waiting to be written, and a newer one takes its place in
// the queue, so a slow reader gets the newest state when it next reads,
// never a queue of stale ones.
//
// The pending MESSAGE stays an ordinary queue item (a msg and its sub,
// encoded once per broadcast like any other); the subscription's
// latestSlot remembers its position as a count of the items ever taken
// from the front of the queue (outbox.taken), so finding it is O(1)
// without scanning the queue. Once the writer has taken it, the next
// MESSAGE is queued at the end: a subscription holds at most one MESSAGE
// waiting and one being written.
//
// Such a MESSAGE is queued even when the session holds its bounds
// (Config.OutboundQueue, Config.OutboundBytes), so a latest-value
// destination never closes its subscriber as a slow consumer; what it
// holds is bounded by one frame per latest-value subscription. Its bytes
// count like any frame's, in the session's bounds (a MESSAGE of another
// destination that does not fit still closes the session) and in the
// server's outbound budget, and a replaced MESSAGE's bytes leave both at
// once.

// latestSubscriber delivers the messages of a latest-value subscription
// to its session, which holds at most one of them waiting (see
// outbox.offerLatest).
type latestSubscriber struct {
	s    *session
	user string // for a user destination, the client's "/user/queue/<name>"; else ""
	rule string // DestinationOptions.Rule, for the count of replaced messages
	// slot is where the pending MESSAGE sits; guarded by s.box.mu.
	slot latestSlot
}

// Deliver queues m for sub, replacing the subscription's MESSAGE still
// waiting to be written if there is one. It refuses only when the
// session is closing: a latest-value subscription never makes its
// session a slow consumer.
func (l *latestSubscriber) Deliver(sub *broker.Subscription, m *broker.Message, b *broker.Batch) bool {
	if l.user != "" {
		m = m.Redirected(l.user)
	}
	ok := l.s.deliverLatest(sub, m, b, l)
	if ok && l.user != "" && l.s.srv.backend != nil {
		l.s.srv.backend.UserDelivered()
	}
	return ok
}

// deliverLatest is Deliver for a latest-value subscription l.
func (s *session) deliverLatest(sub *broker.Subscription, m *broker.Message, b *broker.Batch, l *latestSubscriber) bool {
	p, replaced, ok := s.box.offerLatest(&l.slot, outItem{msg: m, sub: sub}, m.Size(sub))
	if !ok {
		return false
	}
	s.startWriter(p, b)
	if replaced {
		if d := s.srv.dest; d != nil {
			d.LatestReplaced(l.rule)
		}
	}
	s.checkBudget(p)
	return true
}

// latestSlot is a latest-value subscription's place in its session's
// outbox. The zero value holds nothing. Guarded by the outbox's mu.
type latestSlot struct {
	// seq is the pending MESSAGE's position: the value of outbox.taken
	// when it will be at the front of the queue. The MESSAGE is still
	// waiting while seq >= taken.
	seq     uint64
	pending bool // seq has been set
}

// offerLatest queues it, a MESSAGE of size bytes for slot's subscription,
// or puts it in place of the subscription's MESSAGE still waiting in the
// queue (replaced), whose bytes it takes out of the accounting. It does
// not check the bounds (see above) and refuses (ok false) only when the
// outbox is closed.
func (o *outbox) offerLatest(slot *latestSlot, it outItem, size int) (p pushed, replaced, ok bool) {
	// No defer: this is the hot path of every latest-value delivery, as
	// Deliver's is of the others.
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return p, false, false
	}
	if slot.pending && slot.seq >= o.taken {
		if i := slot.seq - o.taken; i < uint64(len(o.queue)) && o.queue[i].sub == it.sub {
			q := &o.queue[i]
			o.queuedBytes += size - itemSize(q)
			q.msg = it.msg
			p.total = o.recountLocked()
			o.mu.Unlock()
			return p, true, true
		}
	}
	slot.seq, slot.pending = o.taken+uint64(len(o.queue)), true
	p = o.pushLocked(it, size)
	o.mu.Unlock()
	return p, false, true
}
