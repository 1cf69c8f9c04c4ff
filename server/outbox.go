package server

import (
	"sync"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/outcome"
)

// outItem is one entry of a session's outbound queue: a MESSAGE (msg and
// sub), an encoded frame (raw), or the final close.
type outItem struct {
	msg    *broker.Message
	sub    *broker.Subscription
	raw    []byte
	close  bool
	code   wsconn.StatusCode
	reason string // the close's reason text
}

// outbox is a session's outbound side: the queue of frames waiting for a
// writer, its bounds (Config.OutboundQueue frames, Config.OutboundBytes
// bytes), what the writer has taken and not yet written (in flight, still
// held against the bounds), the session's part of the server's outbound
// budget, and the end of the session's output. It does no I/O: the
// session's writer takes batches from it, writes them to the socket and
// says when it is done (see Flush and writeLoop).
//
// The session ends when its outbox closes: after that only the final
// close is queued. The first close reason is recorded with it, under the
// same lock, so that a writer that fails, a slow consumer's close and the
// reader's own end cannot record different reasons.
//
// Lock order: a session's mu, then its outbox's mu. The outbox never
// takes the session's mu, and the hot path (Deliver) takes only the
// outbox's. Neither is held while a socket is written.
//
// The zero value is not ready: init sets the bounds and the budget. An
// outbox is safe for concurrent use.
type outbox struct {
	maxFrames int             // Config.OutboundQueue
	maxBytes  int             // Config.OutboundBytes
	budget    *outboundBudget // the server's (Server.out)

	writers sync.WaitGroup // the writer, while one runs (see pushLocked)

	// mu guards the fields below.
	mu          sync.Mutex
	writing     bool           // a writer runs or has been handed the start of one
	deferred    bool           // the start was handed to a batch and not yet claimed (handoff.go)
	closed      bool           // no more frames are queued, except the final close
	reason      *outcome.Close // the first close reason, recorded as closed is set
	queue       []outItem
	queuedBytes int        // bytes of the frames in queue
	inflight    int        // frames the writer took and has not finished writing
	inflightB   int        // their bytes
	drained     *sync.Cond // on mu, made when someone first waits: the writer finished a batch, or closed
	counted     int        // the part of queuedBytes+inflightB in budget.total (see recountLocked)
	releasing   bool       // closed as a slow consumer: counted is also in budget.releasing
	// deferredTo is the last batch handed the start while deferred.
	deferredTo *broker.Batch
	// taken counts the items ever taken from the front of queue, by the
	// writer or discarded (less those put back), so that taken+i names
	// queue[i] for as long as it is queued (see latestSlot).
	taken uint64
}

// init readies o with the server's bounds and budget.
func (o *outbox) init(cfg *Config, budget *outboundBudget) {
	o.maxFrames, o.maxBytes, o.budget = cfg.OutboundQueue, cfg.OutboundBytes, budget
}

// pushed is what a push asks of its caller.
type pushed struct {
	// start: no writer ran, and this push counted one in writers; the
	// caller starts it (session.startWriter).
	start bool
	// total is the server's outbound total when this push moved it, else
	// 0; over the budget's limit, the caller sheds (Server.shed).
	total int64
}

// delivered is what became of a MESSAGE offered to the outbox.
type delivered uint8

const (
	// queued: the frame is queued.
	queued delivered = iota
	// refusedClosed: the outbox was closed; nothing changed.
	refusedClosed
	// refusedSlow: the frame did not fit and the outbox closed as a slow
	// consumer: its queue is discarded and the close queued.
	refusedSlow
)

// admitLocked reports whether a MESSAGE of size bytes may be queued: the
// outbox is open and the frame fits its bounds. Deliver, on the path
// every delivery takes, holds mu across it and pushLocked and makes no
// other call; what it does not admit goes to refuseLocked.
func (o *outbox) admitLocked(size int) bool {
	return !o.closed && !o.fullLocked(size)
}

// refuseLocked refuses a MESSAGE that admitLocked did not admit, and
// unlocks mu. Unless the outbox was already closed, it closes it as a
// slow consumer; frames and bytes are what it held then.
func (o *outbox) refuseLocked() (d delivered, p pushed, frames, bytes int) {
	defer o.mu.Unlock()
	if o.closed {
		return refusedClosed, p, 0, 0
	}
	frames, bytes = o.heldLocked()
	return refusedSlow, o.slowConsumerLocked(), frames, bytes
}

// send queues an encoded frame unless the outbox is closed, and reports
// whether it did. It ignores the bounds: it is for frames the protocol
// itself bounds (CONNECTED, once per session).
func (o *outbox) send(raw []byte) (p pushed, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return p, false
	}
	return o.pushLocked(outItem{raw: raw}, len(raw)), true
}

// reply queues raw, one of the session's own replies, and reports whether
// it did. When the outbox already holds its bounds, it waits until the
// writer has drained some or the outbox closes; before it first waits it
// calls pause with no lock held (the session's reader flushes its batch,
// whose writers must not wait for it, and counts the pause).
func (o *outbox) reply(raw []byte, pause func()) (p pushed, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed && o.fullLocked(len(raw)) {
		o.mu.Unlock()
		pause()
		o.mu.Lock()
		for !o.closed && o.fullLocked(len(raw)) {
			o.waitLocked()
		}
	}
	if o.closed {
		return p, false
	}
	return o.pushLocked(outItem{raw: raw}, len(raw)), true
}

// heartBeat queues a heart-beat EOL unless something is already held,
// which will reach the client sooner or show the peer is not reading. It
// reports false when the outbox is closed.
func (o *outbox) heartBeat() (p pushed, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return p, false
	}
	if frames, _ := o.heldLocked(); frames == 0 {
		p = o.pushLocked(outItem{raw: heartBeatEOL}, len(heartBeatEOL))
	}
	return p, true
}

// closeAfter closes the outbox for reason, if it is the first, and queues
// a close with reason's code and text after everything already queued.
func (o *outbox) closeAfter(reason *outcome.Close, text string) (p pushed) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.endLocked(reason) {
		p = o.pushLocked(outItem{close: true, code: wsconn.StatusCode(reason.Code()), reason: text}, 0)
	}
	return p
}

// end closes the outbox for reason and reports whether it was the first
// to: nothing more is queued but the final close.
func (o *outbox) end(reason *outcome.Close) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.endLocked(reason)
}

// endLocked is end with mu held; it wakes whoever waits for the outbox.
func (o *outbox) endLocked(reason *outcome.Close) bool {
	if o.closed {
		return false
	}
	o.closed, o.reason = true, reason
	o.wakeLocked()
	return true
}

// abort closes the outbox for reason, if it is the first, and discards
// what is queued: the connection is about to be dropped.
func (o *outbox) abort(reason *outcome.Close) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLocked(reason)
	o.discardQueueLocked()
}

// isClosed reports whether the outbox is closed.
func (o *outbox) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// closeReason returns the reason the outbox closed for; nil while open.
func (o *outbox) closeReason() *outcome.Close {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reason
}

// held returns what the outbox holds, queued and in flight, and whether
// it is closed.
func (o *outbox) held() (frames, bytes int, closed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	frames, bytes = o.heldLocked()
	return frames, bytes, o.closed
}

// heldLocked returns the frames and bytes held: queued, and taken by the
// writer and not yet written.
func (o *outbox) heldLocked() (frames, bytes int) {
	return len(o.queue) + o.inflight, o.queuedBytes + o.inflightB
}

// fullLocked reports whether one more frame of size bytes would take the
// outbox over its bounds. Frames the writer has taken but not yet written
// still count: they are held until the socket takes them. An empty outbox
// always takes one frame, however large.
func (o *outbox) fullLocked(size int) bool {
	held := len(o.queue) + o.inflight
	if held == 0 {
		return false
	}
	return held >= o.maxFrames || o.queuedBytes+o.inflightB+size > o.maxBytes
}

// slowConsumerLocked closes the outbox as a slow consumer, discards the
// queue and queues a close with 1008: the frames waiting would only delay
// the close of a peer that does not read.
func (o *outbox) slowConsumerLocked() pushed {
	o.endLocked(outcome.CloseSlowConsumer)
	o.releaseLocked()
	return o.pushLocked(outItem{close: true, code: wsconn.StatusCode(outcome.CloseSlowConsumer.Code()), reason: outcome.CloseSlowConsumer.Message()}, 0)
}

// pushLocked appends it, of size bytes, to the queue. When no writer
// runs, it counts one in writers and asks the caller to start it.
func (o *outbox) pushLocked(it outItem, size int) (p pushed) {
	if o.queue == nil {
		o.queue = newQueue()
	}
	o.queue = append(o.queue, it)
	o.queuedBytes += size
	p.total = o.recountLocked()
	if !o.writing {
		o.writing = true
		o.writers.Add(1)
		p.start = true
	}
	return p
}

// discardQueueLocked drops what is queued and not yet taken by the
// writer, for an end that will not flush it.
func (o *outbox) discardQueueLocked() {
	o.taken += uint64(len(o.queue))
	clear(o.queue)
	o.queue = o.queue[:0]
	o.queuedBytes = 0
	o.recountLocked()
}

// wake wakes whoever waits for the outbox (a reply waiting for room, a
// reader pausing until a deadline).
func (o *outbox) wake() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wakeLocked()
}

func (o *outbox) wakeLocked() {
	if o.drained != nil {
		o.drained.Broadcast()
	}
}

// waitLocked waits, with mu held, until the writer finishes a batch, the
// outbox closes or wake is called.
func (o *outbox) waitLocked() {
	if o.drained == nil {
		o.drained = sync.NewCond(&o.mu)
	}
	o.drained.Wait()
}

// waitUntil waits until the outbox closes or, when someone wakes it,
// until is past, and reports whether it closed. The caller arranges a
// wake at or after until.
func (o *outbox) waitUntil(until time.Time) (closed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.closed && time.Now().Before(until) {
		o.waitLocked()
	}
	return o.closed
}

// takeAll hands the writer the whole queue when it makes one write batch
// and holds no close; the frames count as in flight until written. idle
// reports that nothing was queued: no writer runs now, and the caller's
// writer, counted in writers, ends. With neither items nor idle, the
// queue is left to a writer goroutine (takeBatch).
func (o *outbox) takeAll() (items []outItem, idle bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.idleLocked() {
		return nil, true
	}
	if o.queuedBytes > writeBatchSize || hasClose(o.queue) {
		return nil, false
	}
	return o.takeLocked(nil), false
}

// putBack returns items, taken by takeAll and not written at all, to the
// front of the queue.
func (o *outbox) putBack(items []outItem) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue = append(items, o.queue...)
	o.taken -= uint64(len(items))
	o.queuedBytes += o.inflightB
	o.inflight, o.inflightB = 0, 0
}

// takeBatch is takeAll for the writer goroutine, which may wait on the
// socket: it hands over the frames at the front of the queue that make
// one write batch, a close among them, up to and including the frame that
// reaches writeBatchSize bytes as the writer packs them; spare becomes the
// new queue when all are taken. A writer stuck on a socket that is not
// read then holds one batch in flight, and a slow consumer's close
// discards the rest at once rather than after the write times out. idle
// is as for takeAll.
func (o *outbox) takeBatch(spare []outItem) (items []outItem, idle bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.idleLocked() {
		return nil, true
	}
	return o.takeBatchLocked(spare), false
}

// idleLocked reports whether nothing is queued and, if so, records that
// no writer runs; an idle outbox holds no queue memory.
func (o *outbox) idleLocked() bool {
	if len(o.queue) > 0 {
		return false
	}
	o.writing = false
	recycleQueue(o.queue)
	o.queue = nil
	return true
}

// takeLocked hands what is queued to the writer, spare becoming the new
// queue. The frames count as in flight, against the bounds, until
// writtenLocked.
func (o *outbox) takeLocked(spare []outItem) []outItem {
	items := o.queue
	o.queue = spare
	o.taken += uint64(len(items))
	o.inflight, o.inflightB = len(items), o.queuedBytes
	o.queuedBytes = 0
	return items
}

// takeBatchLocked is takeBatch with mu held and the queue not empty.
func (o *outbox) takeBatchLocked(spare []outItem) []outItem {
	n, bytes, packed := 0, 0, 0
	for n < len(o.queue) && packed < writeBatchSize {
		it := &o.queue[n]
		bytes += itemSize(it)
		packed += frameLen(it)
		n++
	}
	if n == len(o.queue) {
		return o.takeLocked(spare)
	}
	if spare == nil {
		spare = newQueue()
	}
	items := append(spare[:0], o.queue[:n]...)
	o.taken += uint64(n)
	k := copy(o.queue, o.queue[n:])
	clear(o.queue[k:])
	o.queue = o.queue[:k]
	bytes = min(bytes, o.queuedBytes)
	o.inflight, o.inflightB = n, bytes
	o.queuedBytes -= bytes
	return items
}

// written records that the writer is done with what it took, and wakes
// a reply waiting for room. When the write failed, the outbox closes
// (the client is gone) and, with discard, drops what is queued, for a
// writer that will not go through it.
func (o *outbox) written(failed, discard bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writtenLocked()
	if failed {
		o.endLocked(outcome.CloseClientGone)
		if discard {
			o.discardQueueLocked()
		}
	}
}

func (o *outbox) writtenLocked() {
	o.inflight, o.inflightB = 0, 0
	o.recountLocked()
	o.wakeLocked()
}

// writerPanicked closes the outbox after its writer panicked: no writer
// runs any more, and what is queued, which none will take, leaves the
// server's total.
func (o *outbox) writerPanicked() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writing, o.deferred, o.deferredTo = false, false, nil
	o.endLocked(outcome.ClosePanic)
	o.writtenLocked()
	o.discardQueueLocked()
}

// hasClose reports whether items hold the final close.
func hasClose(items []outItem) bool {
	for i := range items {
		if items[i].close {
			return true
		}
	}
	return false
}
