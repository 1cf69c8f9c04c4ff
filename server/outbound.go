package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/internal/wsconn"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

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
	o := &s.box
	o.mu.Lock()
	if !o.admitLocked(size) {
		if d, p, frames, bytes := o.refuseLocked(); d == refusedSlow {
			s.slowConsumer(p, frames, bytes)
		}
		return false
	}
	p := o.pushLocked(outItem{msg: m, sub: sub}, size)
	held := o.deferLocked(p.start, b)
	o.mu.Unlock()
	if held {
		b.Defer(s)
	} else if p.start {
		go s.writeLoop()
	}
	s.checkBudget(p)
	return true
}

// checkBudget sheds the largest backlogs when a push took the server's
// outbound total over its limit. p.total is 0 unless the push moved the
// server's count, which most do not (see recountLocked), so the check
// stays small enough to inline.
func (s *session) checkBudget(p pushed) {
	if p.total != 0 {
		if limit := s.srv.out.limit; limit > 0 && p.total > limit {
			s.srv.shed()
		}
	}
}

// slowConsumer starts the writer that sends a slow consumer's close, and
// counts and logs the close; the outbox held frames and bytes when it
// refused one more.
func (s *session) slowConsumer(p pushed, frames, bytes int) {
	s.startWriter(p, nil)
	s.srv.cfg.Observer.SlowConsumerDisconnect()
	s.srv.cfg.Logger.Warn("slow consumer disconnected", "session", s.st.ID, "ip", s.st.RemoteIP.String(), "frames", frames, "bytes", bytes)
}

// startWriter starts the writer a push asked for: through b when it takes
// it, else on a goroutine of its own. Most pushes find a writer running;
// the check stays small enough to inline.
func (s *session) startWriter(p pushed, b *broker.Batch) {
	if p.start {
		s.start(b)
	}
}

func (s *session) start(b *broker.Batch) {
	if b == nil {
		go s.writeLoop()
		return
	}
	s.box.mu.Lock()
	held := s.box.deferLocked(true, b)
	s.box.mu.Unlock()
	if held {
		b.Defer(s)
		return
	}
	go s.writeLoop()
}

// send queues an encoded frame unless the session is closing. It is for
// frames bounded by the protocol itself (CONNECTED, once per session);
// replies a client can ask for without bound go through reply.
func (s *session) send(raw []byte) bool {
	p, ok := s.box.send(raw)
	s.startWriter(p, nil)
	return ok
}

// reply queues one of the session's own replies (a RECEIPT) on the reader
// goroutine. When the session already holds its limit of outbound frames
// or bytes, the reader waits until the writer has drained some: the
// session stops reading, and TCP pushes back on a client that asks for
// replies faster than it reads them. The wait ends when the session
// closes (a write that times out closes it). It reports whether the
// reply was queued. On the reader, the batch writes the reply with
// whatever else the frames read so far produced.
func (s *session) reply(raw []byte) bool {
	p, ok := s.box.reply(raw, s.readerPaused)
	s.startWriter(p, &s.batch)
	return ok
}

// readerPaused runs as a reply starts to wait for room: the writers this
// reader's batch holds back, this session's own among them, must not
// wait for the reader.
func (s *session) readerPaused() {
	s.flushBatch()
	s.srv.cfg.Observer.ReaderPaused()
}

// heartBeat queues a heart-beat EOL unless something is already waiting
// to be written, which will reach the client sooner or show the peer is
// not reading; either way a second EOL would only add to the pile. It
// reports false when the session is closing.
func (s *session) heartBeat() bool {
	p, ok := s.box.heartBeat()
	s.startWriter(p, nil)
	return ok
}

// closeAfter queues a close with reason's code and the text after
// everything already queued, without an ERROR frame.
func (s *session) closeAfter(reason *outcome.Close, text string) {
	s.startWriter(s.box.closeAfter(reason, text), nil)
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
	if !s.box.claim() {
		// Another publisher's batch wrote first (see deferLocked).
		return
	}
	defer func() {
		if v := recover(); v != nil {
			s.writerPanicked(v)
			go s.conn.CloseNow() //nolint:errcheck // the session is ending
			s.box.writers.Done()
		}
	}()
	bp := writeBufPool.Get().(*[]byte)
	defer writeBufPool.Put(bp)
	for range flushRounds {
		items, idle := s.box.takeAll()
		if idle {
			s.box.writers.Done()
			return
		}
		if items == nil {
			break
		}

		var sent bool
		var err error
		if s.deflatedBatch(items) {
			buf, binary := s.appendDeflatedItems((*bp)[:wsconn.MaxHeaderLen], items)
			*bp = buf[:0]
			sent, err = s.conn.TryWriteDeflatedReserved(messageType(binary), buf)
		} else {
			buf, binary := appendItems((*bp)[:wsconn.MaxHeaderLen], items)
			*bp = buf[:0]
			sent, err = s.conn.TryWriteReserved(messageType(binary), buf)
		}
		if err != nil {
			// Nothing went out: the frames go back in front, for the
			// writer goroutine.
			s.box.putBack(items)
			break
		}
		now := time.Now().UnixNano()
		s.lastWrite.Store(now)
		s.observeWritten(items, now)
		clear(items)
		recycleQueue(items)
		if !sent {
			// The connection holds the rest; the frames count as in
			// flight until the writer has sent it.
			go s.writeRest()
			return
		}
		s.box.written(false, false)
	}
	go s.writeLoop()
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

// writeRest is the writer goroutine after a Flush the socket did not take
// whole: it sends what the connection kept, then goes on as writeLoop.
func (s *session) writeRest() {
	err := s.conn.Flush()
	s.box.written(err != nil, true)
	if err != nil {
		_ = s.conn.CloseNow()
	}
	s.writeLoop()
}

// writerPanicked ends the session after a panic in its writer; the caller
// closes the connection.
func (s *session) writerPanicked(v any) {
	s.srv.cfg.Observer.Panic()
	s.srv.cfg.Logger.Error("panic in session writer", "session", s.st.ID, "panic", fmt.Sprint(v))
	s.box.writerPanicked()
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
	defer s.box.writers.Done()
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
		items, idle := s.box.takeBatch(spare)
		if idle {
			recycleQueue(spare)
			return
		}

		const room = wsconn.MaxHeaderLen
		buf := (*bp)[:room]
		binary := false
		z := s.deflatedBatch(items)
		first := 0 // items[first:] are not yet written
		for i := range items {
			it := &items[i]
			if failed {
				continue
			}
			if it.close {
				if len(buf) > room && !s.writeItems(buf, binary, z, items[first:i]) {
					failed = true
					continue
				}
				buf, binary, first = buf[:room], false, i
				// Close sends the close frame and waits for the reply,
				// at most wsconn.CloseTimeout.
				_ = s.conn.Close(it.code, it.reason)
				failed = true
				continue
			}
			// Send what is packed first if this frame would overflow the
			// batch buffer, so the pooled buffer does not grow.
			if it.msg != nil && len(buf) > room && len(buf)+it.msg.Size(it.sub) > cap(buf) {
				if !s.writeItems(buf, binary, z, items[first:i]) {
					failed = true
					continue
				}
				buf, binary, first = buf[:room], false, i
			}
			var b bool
			if z {
				buf, b = s.appendDeflatedItem(buf, it, len(buf) > room)
			} else {
				buf, b = appendItem(buf, it)
			}
			binary = binary || b
			if len(buf)-room >= writeBatchSize {
				if !s.writeItems(buf, binary, z, items[first:i+1]) {
					failed = true
				}
				buf, binary, first = buf[:room], false, i+1
			}
		}
		if !failed && len(buf) > room && !s.writeItems(buf, binary, z, items[first:]) {
			failed = true
		}
		if cap(buf) <= 4*writeBatchSize {
			*bp = buf[:0]
		}
		clear(items)
		spare = items[:0]
		s.box.written(failed, false)
	}
}

// write sends buf, less the header room at its front, as one WebSocket
// message and reports whether it succeeded; deflated says buf holds
// appendDeflatedItem's encoding. The connection bounds the write by
// Config.WriteTimeout.
func (s *session) write(buf []byte, binary, deflated bool) bool {
	var err error
	if deflated {
		err = s.conn.WriteDeflatedReserved(messageType(binary), buf)
	} else {
		err = s.conn.WriteReserved(messageType(binary), buf)
	}
	if err != nil {
		_ = s.conn.CloseNow()
		return false
	}
	s.lastWrite.Store(time.Now().UnixNano())
	return true
}

// writeItems is write for the frames of items, packed in buf, which it
// reports to the server's DeliveryObserver once written.
func (s *session) writeItems(buf []byte, binary, deflated bool, items []outItem) bool {
	if !s.write(buf, binary, deflated) {
		return false
	}
	// write stored the time of the write; only this writer stores it
	// while it runs.
	s.observeWritten(items, s.lastWrite.Load())
	return true
}

// messageType is the WebSocket message type for a batch of frames.
func messageType(binary bool) wsconn.MessageType {
	if binary {
		return wsconn.MessageBinary
	}
	return wsconn.MessageText
}
