package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
)

// newTestOutbox returns an outbox bounded to frames and bytes, counting
// into a budget of its own, with no socket behind it.
func newTestOutbox(frames, bytes int) *outbox {
	o := &outbox{}
	o.init(&Config{OutboundQueue: frames, OutboundBytes: bytes}, &outboundBudget{})
	return o
}

// rawItem returns an encoded frame of n bytes whose first byte is tag.
func rawItem(tag byte, n int) outItem {
	b := bytes.Repeat([]byte{'.'}, n)
	b[0] = tag
	return outItem{raw: b}
}

// deliver offers the outbox a MESSAGE of size bytes as Deliver does,
// without a session or a writer.
func deliver(o *outbox, size int) (d delivered, p pushed, frames, bytes int) {
	o.mu.Lock()
	if !o.admitLocked(size) {
		return o.refuseLocked()
	}
	p = o.pushLocked(outItem{msg: &broker.Message{}}, size)
	o.mu.Unlock()
	return queued, p, 0, 0
}

func (d delivered) String() string {
	switch d {
	case queued:
		return "queued"
	case refusedClosed:
		return "refusedClosed"
	case refusedSlow:
		return "refusedSlow"
	}
	return "delivered(?)"
}

// TestOutboxBounds steps an outbox of 3 frames and 100 bytes through
// deliveries (of MESSAGEs that count as the size given; the writer is
// not run), writer takes and writes: a frame that does not fit closes it
// as a slow consumer, frames in flight count against the bounds, and an
// empty outbox takes one frame however large.
func TestOutboxBounds(t *testing.T) {
	type step struct {
		op     string // deliver, take, written
		size   int    // deliver's frame
		want   delivered
		frames int // held after the step
		bytes  int
	}
	tests := []struct {
		name       string
		steps      []step
		wantReason *outcome.Close
	}{
		{"within bounds", []step{
			{op: "deliver", size: 40, frames: 1, bytes: 40},
			{op: "deliver", size: 40, frames: 2, bytes: 80},
			{op: "deliver", size: 20, frames: 3, bytes: 100},
		}, nil},
		{"over bytes", []step{
			{op: "deliver", size: 40, frames: 1, bytes: 40},
			{op: "deliver", size: 40, frames: 2, bytes: 80},
			{op: "deliver", size: 21, want: refusedSlow, frames: 1}, // the close alone
			{op: "deliver", size: 1, want: refusedClosed, frames: 1},
		}, outcome.CloseSlowConsumer},
		{"over frames", []step{
			{op: "deliver", size: 1, frames: 1, bytes: 1},
			{op: "deliver", size: 1, frames: 2, bytes: 2},
			{op: "deliver", size: 1, frames: 3, bytes: 3},
			{op: "deliver", size: 1, want: refusedSlow, frames: 1},
		}, outcome.CloseSlowConsumer},
		{"empty takes one frame however large", []step{
			{op: "deliver", size: 500, frames: 1, bytes: 500},
			{op: "deliver", size: 1, want: refusedSlow, frames: 1},
		}, outcome.CloseSlowConsumer},
		{"in flight counts until written", []step{
			{op: "deliver", size: 40, frames: 1, bytes: 40},
			{op: "deliver", size: 40, frames: 2, bytes: 80},
			{op: "take", frames: 2, bytes: 80},
			{op: "deliver", size: 20, frames: 3, bytes: 100},
			{op: "written", frames: 1, bytes: 20},
			{op: "deliver", size: 80, frames: 2, bytes: 100},
		}, nil},
		{"a slow consumer's close keeps what is in flight", []step{
			{op: "deliver", size: 60, frames: 1, bytes: 60},
			{op: "take", frames: 1, bytes: 60},
			{op: "deliver", size: 30, frames: 2, bytes: 90},
			{op: "deliver", size: 30, want: refusedSlow, frames: 2, bytes: 60},
			{op: "written", frames: 1},
		}, outcome.CloseSlowConsumer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newTestOutbox(3, 100)
			for i, st := range tt.steps {
				switch st.op {
				case "deliver":
					if d, _, _, _ := deliver(o, st.size); d != st.want {
						t.Fatalf("step %d: deliver(%d) = %v, want %v", i, st.size, d, st.want)
					}
				case "take":
					if items, idle := o.takeAll(); items == nil || idle {
						t.Fatalf("step %d: takeAll() = %d items, idle %v; want the queue", i, len(items), idle)
					}
				case "written":
					o.written(false, false)
				}
				if frames, bytes, _ := o.held(); frames != st.frames || bytes != st.bytes {
					t.Fatalf("step %d (%s %d): held %d frames, %d bytes; want %d, %d", i, st.op, st.size, frames, bytes, st.frames, st.bytes)
				}
			}
			if got := o.closeReason(); got != tt.wantReason {
				t.Errorf("closeReason() = %v, want %v", got, tt.wantReason)
			}
		})
	}
}

// waitingReply queues a RECEIPT on o from a reader of its own and returns
// once the reply has paused that reader for room; what the reply returns
// comes on the channel.
func waitingReply(o *outbox) <-chan bool {
	paused := make(chan struct{})
	done := make(chan bool)
	go func() {
		_, ok := o.reply([]byte("RECEIPT"), func() { close(paused) })
		done <- ok
	}()
	<-paused
	return done
}

// TestOutboxReplyPausesDeliverCloses is the two answers to a full outbox:
// the session's own RECEIPT waits for the writer (its reader pauses),
// while a MESSAGE from another session closes it as a slow consumer.
func TestOutboxReplyPausesDeliverCloses(t *testing.T) {
	t.Run("reply waits for the writer", func(t *testing.T) {
		o := newTestOutbox(2, 1<<10)
		o.send([]byte("a"))
		o.send([]byte("b"))
		done := waitingReply(o)
		select {
		case ok := <-done:
			t.Fatalf("reply returned %v while the outbox was full", ok)
		case <-time.After(20 * time.Millisecond):
		}
		if items, _ := o.takeAll(); len(items) != 2 {
			t.Fatalf("takeAll() = %d items, want 2", len(items))
		}
		o.written(false, false)
		if ok := <-done; !ok {
			t.Fatal("reply = false after the writer drained, want true")
		}
		if frames, bytes, closed := o.held(); frames != 1 || bytes != len("RECEIPT") || closed {
			t.Errorf("held %d frames, %d bytes, closed %v; want the RECEIPT queued", frames, bytes, closed)
		}
	})
	t.Run("reply ends when the outbox closes", func(t *testing.T) {
		o := newTestOutbox(1, 1<<10)
		o.send([]byte("a"))
		done := waitingReply(o)
		o.written(true, true) // a write failed: the client is gone
		if ok := <-done; ok {
			t.Error("reply = true on a closed outbox, want false")
		}
		if got := o.closeReason(); got != outcome.CloseClientGone {
			t.Errorf("closeReason() = %v, want %v", got, outcome.CloseClientGone)
		}
	})
	t.Run("deliver closes a slow consumer", func(t *testing.T) {
		o := newTestOutbox(2, 1<<10)
		o.send([]byte("a"))
		o.send([]byte("b"))
		d, p, frames, bytes := deliver(o, 10)
		if d != refusedSlow || frames != 2 || bytes != 2 {
			t.Fatalf("deliver() = %v, %d frames, %d bytes; want refusedSlow, 2, 2", d, frames, bytes)
		}
		if p.start {
			t.Error("deliver asked for a second writer")
		}
		items, _ := o.takeBatch(nil)
		if len(items) != 1 || !items[0].close || int(items[0].code) != outcome.CloseSlowConsumer.Code() {
			t.Errorf("queue after the refusal = %+v, want the slow consumer's close alone", items)
		}
	})
}

// TestOutboxTake checks what a writer takes: Flush's takeAll only a queue
// that makes one batch without a close, the writer goroutine's takeBatch
// one batch at most, and an empty outbox makes the writer stop.
func TestOutboxTake(t *testing.T) {
	const kib = 10 << 10
	o := newTestOutbox(100, 1<<20)
	if items, idle := o.takeAll(); items != nil || !idle {
		t.Fatalf("takeAll() on an empty outbox = %d items, idle %v; want idle", len(items), idle)
	}
	if p, _ := o.send(rawItem('a', kib).raw); !p.start {
		t.Fatal("the first push after idle did not ask for a writer")
	}
	if p, _ := o.send(rawItem('b', kib).raw); p.start {
		t.Fatal("a second push asked for a second writer")
	}
	for _, c := range []byte("cde") {
		o.send(rawItem(c, kib).raw)
	}
	// 50 KiB queued: more than one batch.
	if items, idle := o.takeAll(); items != nil || idle {
		t.Fatalf("takeAll() of 50 KiB = %d items, idle %v; want them left to the writer goroutine", len(items), idle)
	}
	// The batch ends with the frame that reaches writeBatchSize: 40 KiB.
	items, _ := o.takeBatch(nil)
	if len(items) != 4 || items[3].raw[0] != 'd' {
		t.Fatalf("takeBatch() = %d items, want a to d", len(items))
	}
	if frames, bytes, _ := o.held(); frames != 5 || bytes != 5*kib {
		t.Fatalf("held %d frames, %d bytes after the take; want all 5 still held", frames, bytes)
	}
	o.written(false, false)
	items, _ = o.takeBatch(nil)
	if len(items) != 1 || items[0].raw[0] != 'e' {
		t.Fatalf("second takeBatch() = %d items, want e", len(items))
	}
	o.written(false, false)
	if _, idle := o.takeBatch(nil); !idle {
		t.Fatal("takeBatch() on a written outbox is not idle")
	}
	if o.writing || o.queue != nil {
		t.Errorf("idle outbox: writing %v, queue %v; want no writer and no queue", o.writing, o.queue)
	}

	o.send([]byte("x"))
	o.closeAfter(outcome.CloseNormal, "")
	if items, idle := o.takeAll(); items != nil || idle {
		t.Errorf("takeAll() of a queue with a close = %d items, idle %v; want it left to the writer goroutine", len(items), idle)
	}
}

// TestOutboxPutBack is Flush's answer to ErrWouldWait: nothing was
// written, so what it took goes back in front of what was queued since.
func TestOutboxPutBack(t *testing.T) {
	o := newTestOutbox(10, 1<<10)
	o.send([]byte("a"))
	o.send([]byte("b"))
	items, _ := o.takeAll()
	o.send([]byte("c"))
	o.putBack(items)
	if frames, bytes, _ := o.held(); frames != 3 || bytes != 3 || o.inflight != 0 {
		t.Fatalf("held %d frames, %d bytes, %d in flight; want 3, 3, 0", frames, bytes, o.inflight)
	}
	items, _ = o.takeBatch(nil)
	var got []byte
	for _, it := range items {
		got = append(got, it.raw...)
	}
	if string(got) != "abc" {
		t.Errorf("after putBack the writer takes %q, want %q", got, "abc")
	}
}

// TestOutboxBudget steps an outbox's part of the server's outbound total:
// counted in 32 KiB steps, rounded down, while queued and in flight, and
// given back as the writer finishes or the queue is discarded.
func TestOutboxBudget(t *testing.T) {
	const step = countStep
	type stepT struct {
		op        string // send, take, written, slow, abort
		size      int
		total     int64 // budget total after the step
		releasing int64 // budget releasing after the step
		pushTotal int64 // what the push reported; 0 when it did not move the total
	}
	tests := []struct {
		name  string
		steps []stepT
	}{
		{"below a step is not counted", []stepT{
			{op: "send", size: 1000},
			{op: "send", size: step - 1001},
		}},
		{"counted by steps", []stepT{
			{op: "send", size: step - 1},
			{op: "send", size: 1, total: step, pushTotal: step},
			{op: "send", size: step + 10, total: 2 * step, pushTotal: 2 * step},
			{op: "take", total: 2 * step},
			{op: "send", size: step, total: 3 * step, pushTotal: 3 * step},
			{op: "written", total: 2 * step},
		}},
		{"released on a slow consumer's close", []stepT{
			{op: "send", size: step, total: step, pushTotal: step},
			{op: "take", total: step},
			{op: "send", size: 2 * step, total: 3 * step, pushTotal: 3 * step},
			{op: "slow", total: step, releasing: step},
			{op: "written", total: 0, releasing: 0},
		}},
		{"released on abort", []stepT{
			{op: "send", size: 2 * step, total: 2 * step, pushTotal: 2 * step},
			{op: "abort", total: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newTestOutbox(1<<10, 1<<30)
			for i, st := range tt.steps {
				var p pushed
				switch st.op {
				case "send":
					p, _ = o.send(make([]byte, st.size))
				case "take":
					o.takeBatch(nil)
				case "written":
					o.written(false, false)
				case "slow":
					o.mu.Lock()
					o.slowConsumerLocked()
					o.mu.Unlock()
				case "abort":
					o.abort(outcome.CloseHeartBeat)
				}
				if p.total != st.pushTotal {
					t.Errorf("step %d (%s %d): push reported total %d, want %d", i, st.op, st.size, p.total, st.pushTotal)
				}
				if got := o.budget.total.Load(); got != st.total {
					t.Fatalf("step %d (%s %d): total %d, want %d", i, st.op, st.size, got, st.total)
				}
				if got := o.budget.releasing.Load(); got != st.releasing {
					t.Fatalf("step %d (%s %d): releasing %d, want %d", i, st.op, st.size, got, st.releasing)
				}
			}
		})
	}
}

// TestOutboxEnd checks that the first close reason is the one kept, and
// that a closed outbox queues nothing but closeAfter's own close.
func TestOutboxEnd(t *testing.T) {
	o := newTestOutbox(10, 1<<10)
	if !o.end(outcome.CloseShutdown) {
		t.Fatal("end() = false on an open outbox")
	}
	if o.end(outcome.CloseClientGone) {
		t.Error("a second end() = true")
	}
	o.written(true, false)
	if got := o.closeReason(); got != outcome.CloseShutdown {
		t.Errorf("closeReason() = %v, want the first, %v", got, outcome.CloseShutdown)
	}
	if _, ok := o.send([]byte("x")); ok {
		t.Error("send on a closed outbox = true")
	}
	if _, ok := o.heartBeat(); ok {
		t.Error("heartBeat on a closed outbox = true")
	}
	if p := o.closeAfter(outcome.CloseNormal, ""); p.start {
		t.Error("closeAfter on a closed outbox queued a close")
	}
	if frames, _, _ := o.held(); frames != 0 {
		t.Errorf("a closed outbox holds %d frames, want 0", frames)
	}
}
