package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/stompframe"
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

// heartBeatEOL is the heart-beat a STOMP peer sends when it has nothing
// else to send (STOMP 1.2 "Heart-beating").
var heartBeatEOL = []byte{'\n'}

var _ broker.Subscriber = (*session)(nil)

// Deliver queues m for sub. It never blocks: when the session already
// holds its limit of outbound frames or bytes, the session is closed as a
// slow consumer and Deliver returns false. When no writer runs, the
// publisher's batch b is handed the start of one (see Flush).
func (s *session) Deliver(sub *broker.Subscription, m *broker.Message, b *broker.Batch) bool {
	size := m.Size(sub)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	if s.fullLocked(size) {
		frames, bytes := len(s.queue)+s.inflight, s.queuedBytes+s.inflightB
		s.slowConsumerLocked()
		s.mu.Unlock()
		s.srv.cfg.Observer.SlowConsumerDisconnect()
		s.srv.cfg.Logger.Warn("slow consumer disconnected", "session", s.st.ID, "ip", s.st.RemoteIP.String(), "frames", frames, "bytes", bytes)
		return false
	}
	total := s.pushLocked(outItem{msg: m, sub: sub}, size, b)
	s.mu.Unlock()
	// total is 0 unless this delivery moved the server's count, which
	// most do not (see recountLocked).
	if total != 0 {
		if limit := s.srv.out.limit; limit > 0 && total > limit {
			s.srv.shed()
		}
	}
	return true
}

// fullLocked reports whether one more frame of size bytes would take the
// session over its outbound bounds. Frames the writer has taken but not
// yet written still count: they are held until the socket takes them. An
// empty session always takes one frame, however large.
func (s *session) fullLocked(size int) bool {
	held := len(s.queue) + s.inflight
	if held == 0 {
		return false
	}
	return held >= s.srv.cfg.OutboundQueue || s.queuedBytes+s.inflightB+size > s.srv.cfg.OutboundBytes
}

// slowConsumerLocked discards the queue and queues a close with 1008: the
// frames waiting would only delay the close of a peer that does not read.
func (s *session) slowConsumerLocked() {
	s.endLocked(CloseSlowConsumer)
	s.releaseLocked()
	s.pushLocked(outItem{close: true, code: CloseSlowConsumer.Code(), reason: CloseSlowConsumer.Message()}, 0, nil)
}

// send queues an encoded frame unless the session is closing. It is for
// frames bounded by the protocol itself (CONNECTED, once per session);
// replies a client can ask for without bound go through reply.
func (s *session) send(raw []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.pushLocked(outItem{raw: raw}, len(raw), nil)
	return true
}

// reply queues one of the session's own replies (a RECEIPT) on the reader
// goroutine. When the session already holds its limit of outbound frames
// or bytes, the reader waits until the writer has drained some: the
// session stops reading, and TCP pushes back on a client that asks for
// replies faster than it reads them. The wait ends when the session
// closes (a write that times out closes it). It reports whether the
// reply was queued.
func (s *session) reply(raw []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing && s.fullLocked(len(raw)) {
		// The writers this reader's batch holds back, this session's own
		// among them, must not wait for the reader.
		s.mu.Unlock()
		s.flushBatch()
		s.mu.Lock()
		s.srv.cfg.Observer.ReaderPaused()
		if s.drained == nil {
			s.drained = sync.NewCond(&s.mu)
		}
		for !s.closing && s.fullLocked(len(raw)) {
			s.drained.Wait()
		}
	}
	if s.closing {
		return false
	}
	// On the reader: the batch writes it with whatever else the frames
	// read so far produced.
	s.pushLocked(outItem{raw: raw}, len(raw), &s.batch)
	return true
}

// discardQueueLocked drops what is queued and not yet taken by the
// writer, for an end that will not flush it.
func (s *session) discardQueueLocked() {
	clear(s.queue)
	s.queue = s.queue[:0]
	s.queuedBytes = 0
	s.recountLocked()
}

// wakeLocked wakes a reader waiting in reply for the queue to drain.
func (s *session) wakeLocked() {
	if s.drained != nil {
		s.drained.Broadcast()
	}
}

// heartBeat queues a heart-beat EOL unless something is already waiting
// to be written, which will reach the client sooner or show the peer is
// not reading; either way a second EOL would only add to the pile.
func (s *session) heartBeat() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	if len(s.queue)+s.inflight == 0 {
		s.pushLocked(outItem{raw: heartBeatEOL}, len(heartBeatEOL), nil)
	}
	return true
}

// closeAfter queues a close with reason's code and the text after
// everything already queued, without an ERROR frame.
func (s *session) closeAfter(reason *CloseReason, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endLocked(reason) {
		s.pushLocked(outItem{close: true, code: reason.Code(), reason: text}, 0, nil)
	}
}

// pushLocked appends it, of size bytes, to the queue and starts the writer
// if none runs: through b when it takes it, else on a goroutine of its
// own. It returns the server's outbound total when this push changed it,
// else 0.
func (s *session) pushLocked(it outItem, size int, b *broker.Batch) (total int64) {
	if s.queue == nil {
		s.queue = newQueue()
	}
	s.queue = append(s.queue, it)
	s.queuedBytes += size
	total = s.recountLocked()
	if !s.writing {
		s.writing = true
		s.writers.Add(1)
		if !b.Defer(s) {
			go s.writeLoop()
		}
	}
	return total
}

// flushRounds is how many batches Flush writes before it leaves the rest
// to a writer goroutine, so that other publishers feeding this session
// cannot keep the flushing one from its own reading.
const flushRounds = 2

// Flush is the writer a publisher's batch started (broker.Flusher), run on
// the publisher's reader before it waits for input: it writes what is
// queued without waiting on this session's socket. What the socket does
// not take at once, a close, more than a batch, more than flushRounds
// batches, a connection another write holds and a failed write are left
// to a writer goroutine, which may wait, and closes the connection if it
// must: Flush may run inside a read on the publisher's descriptor, where
// closing one could wait for that read to end.
func (s *session) Flush() {
	defer func() {
		if v := recover(); v != nil {
			s.writerPanicked(v)
			go s.conn.CloseNow() //nolint:errcheck // the session is ending
			s.writers.Done()
		}
	}()
	bp := writeBufPool.Get().(*[]byte)
	defer writeBufPool.Put(bp)
	for range flushRounds {
		s.mu.Lock()
		if s.idleLocked() {
			s.mu.Unlock()
			s.writers.Done()
			return
		}
		if s.queuedBytes > writeBatchSize || hasClose(s.queue) {
			s.mu.Unlock()
			break
		}
		items := s.takeLocked(nil)
		s.mu.Unlock()

		buf, binary := appendItems((*bp)[:wsconn.MaxHeaderLen], items)
		*bp = buf[:0]
		sent, err := s.conn.TryWriteReserved(messageType(binary), buf)
		if err != nil {
			// Nothing went out: the frames go back in front, for the
			// writer goroutine.
			s.mu.Lock()
			s.queue = append(items, s.queue...)
			s.queuedBytes += s.inflightB
			s.inflight, s.inflightB = 0, 0
			s.mu.Unlock()
			break
		}
		clear(items)
		recycleQueue(items)
		s.lastWrite.Store(time.Now().UnixNano())
		if !sent {
			// The connection holds the rest; the frames count as in
			// flight until the writer has sent it.
			go s.writeRest()
			return
		}
		s.mu.Lock()
		s.writtenLocked()
		s.mu.Unlock()
	}
	go s.writeLoop()
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

// appendItems appends the frames of items, none of them a close, to buf
// and reports whether any needs a binary message.
func appendItems(buf []byte, items []outItem) ([]byte, bool) {
	binary := false
	for i := range items {
		var b bool
		buf, b = appendItem(buf, &items[i])
		binary = binary || b
	}
	return buf, binary
}

// appendItem appends the frame of it, not a close, to buf and reports
// whether it needs a binary message.
func appendItem(buf []byte, it *outItem) ([]byte, bool) {
	if it.msg != nil {
		return it.msg.AppendFrame(buf, it.sub), it.msg.Binary
	}
	return append(buf, it.raw...), false
}

// idleLocked reports whether nothing is queued and, if so, records that
// no writer runs; an idle session holds no queue memory.
func (s *session) idleLocked() bool {
	if len(s.queue) > 0 {
		return false
	}
	s.writing = false
	recycleQueue(s.queue)
	s.queue = nil
	return true
}

// takeLocked hands what is queued to the writer, spare becoming the new
// queue. The frames count as in flight, against the outbound bounds,
// until writtenLocked.
func (s *session) takeLocked(spare []outItem) []outItem {
	items := s.queue
	s.queue = spare
	s.inflight, s.inflightB = len(items), s.queuedBytes
	s.queuedBytes = 0
	return items
}

// takeBatchLocked is takeLocked for the writer goroutine: it hands over
// the frames at the front of the queue that make one write batch, up to
// and including the frame that reaches writeBatchSize bytes, as the
// writer packs them. A writer stuck on a socket that is not read then
// holds one batch in flight, and a slow consumer's close discards the
// rest at once rather than after the write times out.
func (s *session) takeBatchLocked(spare []outItem) []outItem {
	n, bytes, packed := 0, 0, 0
	for n < len(s.queue) && packed < writeBatchSize {
		it := &s.queue[n]
		bytes += itemSize(it)
		packed += frameLen(it)
		n++
	}
	if n == len(s.queue) {
		return s.takeLocked(spare)
	}
	if spare == nil {
		spare = newQueue()
	}
	items := append(spare[:0], s.queue[:n]...)
	k := copy(s.queue, s.queue[n:])
	clear(s.queue[k:])
	s.queue = s.queue[:k]
	bytes = min(bytes, s.queuedBytes)
	s.inflight, s.inflightB = n, bytes
	s.queuedBytes -= bytes
	return items
}

// itemSize is what it counted for when it was queued.
func itemSize(it *outItem) int {
	if it.msg != nil {
		return it.msg.Size(it.sub)
	}
	return len(it.raw)
}

// frameLen is the length of the frame appendItem writes for it: a
// MESSAGE's Size is an upper bound that keeps room for an ack header,
// which only client-ack subscriptions of STOMP 1.2 carry.
func frameLen(it *outItem) int {
	n := itemSize(it)
	if it.msg != nil && (it.sub.Ack == broker.AckAuto || it.sub.Version < stompframe.V12) {
		n -= len("ack:\n") + len(it.msg.ID)
	}
	return n
}

// writtenLocked records that the writer is done with what it took, and
// wakes a reader waiting for room.
func (s *session) writtenLocked() {
	s.inflight, s.inflightB = 0, 0
	s.recountLocked()
	s.wakeLocked()
}

// writeRest is the writer goroutine after a Flush the socket did not take
// whole: it sends what the connection kept, then goes on as writeLoop.
func (s *session) writeRest() {
	err := s.conn.Flush()
	s.mu.Lock()
	s.writtenLocked()
	if err != nil {
		s.writeFailedLocked()
		s.discardQueueLocked()
	}
	s.mu.Unlock()
	if err != nil {
		_ = s.conn.CloseNow()
	}
	s.writeLoop()
}

// writeFailedLocked records that a write failed: the session is closing
// with nothing more to send.
func (s *session) writeFailedLocked() {
	s.closing = true
	if s.reason == nil {
		s.reason = CloseClientGone
	}
	s.wakeLocked()
}

// writerPanicked ends the session after a panic in its writer; the caller
// closes the connection.
func (s *session) writerPanicked(v any) {
	s.srv.cfg.Observer.Panic()
	s.srv.cfg.Logger.Error("panic in session writer", "session", s.st.ID, "panic", fmt.Sprint(v))
	s.mu.Lock()
	s.writing = false
	s.closing = true
	if s.reason == nil {
		s.reason = ClosePanic
	}
	s.writtenLocked()
	// No writer will take what is queued: it leaves the server's total.
	s.discardQueueLocked()
	s.mu.Unlock()
}

var writeBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, wsconn.MaxHeaderLen+writeBatchSize+4096)
	return &b
}}

// writeLoop drains the queue, packing frames into WebSocket messages of up
// to writeBatchSize bytes, and exits when the queue is empty. Each batch
// starts with room for the WebSocket frame header, so a message goes to
// the socket in one write without a copy.
func (s *session) writeLoop() {
	defer s.writers.Done()
	bp := writeBufPool.Get().(*[]byte)
	defer writeBufPool.Put(bp)
	var spare []outItem
	failed := false
	defer func() {
		if v := recover(); v != nil {
			_ = s.conn.CloseNow()
			s.writerPanicked(v)
		}
	}()
	for {
		s.mu.Lock()
		if s.idleLocked() {
			s.mu.Unlock()
			recycleQueue(spare)
			return
		}
		items := s.takeBatchLocked(spare)
		s.mu.Unlock()

		const room = wsconn.MaxHeaderLen
		buf := (*bp)[:room]
		binary := false
		for i := range items {
			it := &items[i]
			if failed {
				continue
			}
			if it.close {
				if len(buf) > room && !s.write(buf, binary) {
					failed = true
					continue
				}
				buf, binary = buf[:room], false
				// Close sends the close frame and waits for the reply,
				// at most wsconn.CloseTimeout.
				_ = s.conn.Close(it.code, it.reason)
				failed = true
				continue
			}
			// Send what is packed first if this frame would overflow the
			// batch buffer, so the pooled buffer does not grow.
			if it.msg != nil && len(buf) > room && len(buf)+it.msg.Size(it.sub) > cap(buf) {
				if !s.write(buf, binary) {
					failed = true
					continue
				}
				buf, binary = buf[:room], false
			}
			var b bool
			buf, b = appendItem(buf, it)
			binary = binary || b
			if len(buf)-room >= writeBatchSize {
				if !s.write(buf, binary) {
					failed = true
				}
				buf, binary = buf[:room], false
			}
		}
		if !failed && len(buf) > room && !s.write(buf, binary) {
			failed = true
		}
		if cap(buf) <= 4*writeBatchSize {
			*bp = buf[:0]
		}
		clear(items)
		spare = items[:0]
		s.mu.Lock()
		s.writtenLocked()
		if failed {
			s.writeFailedLocked()
		}
		s.mu.Unlock()
	}
}

// write sends buf, less the header room at its front, as one WebSocket
// message and reports whether it succeeded. The connection bounds the
// write by Config.WriteTimeout.
func (s *session) write(buf []byte, binary bool) bool {
	if err := s.conn.WriteReserved(messageType(binary), buf); err != nil {
		_ = s.conn.CloseNow()
		return false
	}
	s.lastWrite.Store(time.Now().UnixNano())
	return true
}

// messageType is the WebSocket message type for a batch of frames.
func messageType(binary bool) wsconn.MessageType {
	if binary {
		return wsconn.MessageBinary
	}
	return wsconn.MessageText
}
