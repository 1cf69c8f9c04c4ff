package server

import (
	"strings"
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// testMessage returns a message to dest whose body is tag followed by
// n-1 dots.
func testMessage(dest string, tag byte, n int) *broker.Message {
	f := &stompframe.Frame{Command: stompframe.CommandSend, Body: []byte(string(tag) + strings.Repeat(".", n-1))}
	f.Add("destination", dest)
	return broker.NewMessage(string(tag), f)
}

// TestOutboxLatest steps an outbox through MESSAGEs of two latest-value
// subscriptions (a, b) and an ordinary one (n): a latest MESSAGE replaces
// its subscription's waiting one in place, others keep their order, a
// MESSAGE the writer has taken is not replaced, and the bytes held and
// the budget's total are exact after every step.
func TestOutboxLatest(t *testing.T) {
	const kib = 1 << 10
	subs := map[byte]*broker.Subscription{}
	slots := map[byte]*latestSlot{}
	for _, c := range []byte("abn") {
		subs[c] = broker.NewSubscription(string(c), "/topic/"+string(c), broker.AckAuto, stompframe.V12, nil)
		slots[c] = &latestSlot{}
	}
	type step struct {
		op       string // latest, normal, take (a batch), takeall, putback, written, slow
		sub      byte
		tag      byte // the message's tag
		size     int  // its body
		replaced bool
		queue    string // the tags queued after the step, in order
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"replaced in place, others in order", []step{
			{op: "latest", sub: 'a', tag: '1', size: 20 * kib, queue: "1"},
			{op: "normal", sub: 'n', tag: 'x', size: 1 * kib, queue: "1x"},
			{op: "latest", sub: 'a', tag: '2', size: 30 * kib, replaced: true, queue: "2x"},
			{op: "latest", sub: 'b', tag: 'B', size: 5 * kib, queue: "2xB"},
			{op: "normal", sub: 'n', tag: 'y', size: 1 * kib, queue: "2xBy"},
			{op: "latest", sub: 'b', tag: 'C', size: 40 * kib, replaced: true, queue: "2xCy"},
			{op: "latest", sub: 'a', tag: '3', size: 1 * kib, replaced: true, queue: "3xCy"},
		}},
		{"taken is not replaced", []step{
			{op: "latest", sub: 'a', tag: '1', size: 40 * kib, queue: "1"},
			{op: "take", queue: ""},
			{op: "latest", sub: 'a', tag: '2', size: 10 * kib, queue: "2"},
			{op: "latest", sub: 'a', tag: '3', size: 10 * kib, replaced: true, queue: "3"},
			{op: "written", queue: "3"},
			{op: "latest", sub: 'a', tag: '4', size: 10 * kib, replaced: true, queue: "4"},
		}},
		{"a partial batch shifts the queue", []step{
			{op: "normal", sub: 'n', tag: 'x', size: 20 * kib, queue: "x"},
			{op: "normal", sub: 'n', tag: 'y', size: 20 * kib, queue: "xy"},
			{op: "latest", sub: 'a', tag: '1', size: 1 * kib, queue: "xy1"},
			{op: "take", queue: "1"}, // x and y reach the batch size
			{op: "latest", sub: 'a', tag: '2', size: 2 * kib, replaced: true, queue: "2"},
			{op: "written", queue: "2"},
		}},
		{"put back", []step{
			{op: "latest", sub: 'a', tag: '1', size: 1 * kib, queue: "1"},
			{op: "takeall", queue: ""},
			{op: "latest", sub: 'a', tag: '2', size: 1 * kib, queue: "2"},
			{op: "putback", queue: "12"},
			{op: "latest", sub: 'a', tag: '3', size: 1 * kib, replaced: true, queue: "13"},
		}},
		{"discarded by a slow consumer's close", []step{
			{op: "latest", sub: 'a', tag: '1', size: 1 * kib, queue: "1"},
			{op: "slow", queue: ""},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, sl := range slots {
				*sl = latestSlot{}
			}
			o := newTestOutbox(2, 100*kib)
			var taken []outItem
			for i, st := range tt.steps {
				switch st.op {
				case "latest", "normal":
					m := testMessage("/topic/"+string(st.sub), st.tag, st.size)
					it := outItem{msg: m, sub: subs[st.sub]}
					if st.op == "normal" {
						o.mu.Lock()
						o.pushLocked(it, m.Size(it.sub))
						o.mu.Unlock()
						break
					}
					_, replaced, ok := o.offerLatest(slots[st.sub], it, m.Size(it.sub))
					if !ok || replaced != st.replaced {
						t.Fatalf("step %d: offerLatest(%c) = replaced %v, ok %v; want %v, true", i, st.tag, replaced, ok, st.replaced)
					}
				case "take":
					taken, _ = o.takeBatch(nil)
				case "takeall":
					taken, _ = o.takeAll()
				case "putback":
					o.putBack(taken)
				case "written":
					o.written(false, false)
				case "slow":
					o.mu.Lock()
					o.slowConsumerLocked()
					o.mu.Unlock()
				}
				checkLatestQueue(t, i, o, st.queue)
			}
		})
	}
}

// checkLatestQueue checks that o queues the MESSAGEs tagged want, in
// order, and that its bytes and the budget's total are exactly what it
// holds.
func checkLatestQueue(t *testing.T, step int, o *outbox, want string) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var got []byte
	for i := range o.queue {
		if m := o.queue[i].msg; m != nil {
			got = append(got, m.ID[0])
		}
	}
	if string(got) != want {
		t.Fatalf("step %d: queue %q, want %q", step, got, want)
	}
	var queued int
	for i := range o.queue {
		queued += itemSize(&o.queue[i])
	}
	if o.queuedBytes != queued {
		t.Fatalf("step %d: queuedBytes %d, want %d, what the queue holds", step, o.queuedBytes, queued)
	}
	if want, got := int64((o.queuedBytes+o.inflightB)&^(countStep-1)), o.budget.total.Load(); !o.releasing && got != want {
		t.Fatalf("step %d: budget total %d, want %d", step, got, want)
	}
}

// TestOutboxLatestClosed: a closed outbox refuses latest-value MESSAGEs
// too.
func TestOutboxLatestClosed(t *testing.T) {
	o := newTestOutbox(2, 1<<10)
	o.end(outcome.CloseNormal)
	sub := broker.NewSubscription("a", "/topic/a", broker.AckAuto, stompframe.V12, nil)
	m := testMessage("/topic/a", '1', 10)
	if _, _, ok := o.offerLatest(&latestSlot{}, outItem{msg: m, sub: sub}, m.Size(sub)); ok {
		t.Fatal("offerLatest on a closed outbox = ok")
	}
}
