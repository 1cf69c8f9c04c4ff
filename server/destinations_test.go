package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stompgate/stompgate/outcome"
)

// stateRules gives /topic/state latest-value delivery under the rule
// "state", /topic/room a cap of max subscribers under "room", and every
// other destination the zero options.
func stateRules(max int) func(string) DestinationOptions {
	return func(dest string) DestinationOptions {
		switch dest {
		case "/topic/state":
			return DestinationOptions{Rule: "state", Latest: true}
		case "/topic/room":
			return DestinationOptions{Rule: "room", MaxSubscribers: max}
		}
		return DestinationOptions{}
	}
}

// TestLatestNeverSlowConsumer runs a session that never reads against a
// latest-value destination and an ordinary one, on one session: hundreds
// of states, each larger than what its bounds would let pile up, leave
// it open holding one waiting MESSAGE, the newest; a few MESSAGEs of the
// ordinary destination then close it as a slow consumer.
func TestLatestNeverSlowConsumer(t *testing.T) {
	const size = 4 << 10
	ts := startListeningServer(t, Config{
		OutboundQueue: 8, OutboundBytes: 64 << 10,
		SocketSendBuffer: minSocketSendBuffer, WriteTimeout: time.Minute,
		Destinations: stateRules(0),
	}, nil)
	obs := ts.obs
	_, id := dialStuck(t, ts.url, "/topic/state", "/topic/chat")
	body := []byte(strings.Repeat("s", size))
	const states = 500
	for i := range states {
		copy(body, fmt.Sprintf("%06d", i))
		if _, n := ts.Publish("/topic/state", nil, body); n != 1 {
			t.Fatalf("state %d delivered to %d, want 1", i, n)
		}
	}
	s := ts.session(t, id)
	if r := s.box.closeReason(); r != nil {
		t.Fatalf("after %d states the session closed as %v, want it open", states, r)
	}
	s.box.mu.Lock()
	queued := len(s.box.queue)
	var last string
	if queued > 0 {
		last = string(s.box.queue[queued-1].msg.Body()[:6])
	}
	s.box.mu.Unlock()
	if queued != 1 || last != fmt.Sprintf("%06d", states-1) {
		t.Fatalf("queue holds %d MESSAGEs, the last %q; want 1, the newest %06d", queued, last, states-1)
	}
	if n := obs.count(obs.replaced, "state"); n < states-20 {
		t.Errorf("replaced{state} = %d, want most of the %d states", n, states)
	}

	for i := 0; s.box.closeReason() == nil && i < 100; i++ {
		ts.Publish("/topic/chat", nil, body)
	}
	if r := s.box.closeReason(); r != outcome.CloseSlowConsumer {
		t.Fatalf("after the ordinary destination's MESSAGEs the session closed as %v, want %v", r, outcome.CloseSlowConsumer)
	}
}

// subscribeRaw connects a raw client and subscribes it to dest with a
// receipt, expecting the RECEIPT.
func subscribeRaw(t *testing.T, url, dest string) *rawClient {
	t.Helper()
	c := dialRaw(t, url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:0\ndestination:" + dest + "\nreceipt:s\n\n\x00")
	c.Expect("RECEIPT")
	return c
}

// TestSubscriberCap fills a destination capped at 2: the third SUBSCRIBE
// gets ERROR "subscriber limit reached" with its receipt id, then the
// close; an UNSUBSCRIBE and a session that drops its connection each
// free a place.
func TestSubscriberCap(t *testing.T) {
	ts := startServer(t, Config{Destinations: stateRules(2)})
	a := subscribeRaw(t, ts.url, "/topic/room")
	b := subscribeRaw(t, ts.url, "/topic/room")

	refused := func() {
		t.Helper()
		c := dialRaw(t, ts.url)
		c.Connect()
		c.Send("SUBSCRIBE\nid:0\ndestination:/topic/elsewhere\nreceipt:e\n\n\x00")
		c.Expect("RECEIPT")
		c.Send("SUBSCRIBE\nid:1\ndestination:/topic/room\nreceipt:r3\n\n\x00")
		f := c.Expect("ERROR")
		if got := f.Get("message"); got != "subscriber limit reached" {
			t.Errorf("ERROR message %q, want %q", got, "subscriber limit reached")
		}
		if got := f.Get("receipt-id"); got != "r3" {
			t.Errorf("ERROR receipt-id %q, want r3", got)
		}
		if code := c.ExpectClosed(); code != websocket.StatusPolicyViolation {
			t.Errorf("close %v, want %v", code, websocket.StatusPolicyViolation)
		}
	}
	refused()
	if n := ts.cfg.Broker.Subscribers("/topic/room"); n != 2 {
		t.Fatalf("Subscribers = %d after a refusal, want 2", n)
	}
	waitFor(t, func() bool { return ts.obs.closedCount(outcome.CloseSubscriberCap) == 1 })
	if n := ts.obs.count(ts.obs.capRefused, "room"); n != 1 {
		t.Errorf("capRefused{room} = %d, want 1", n)
	}

	a.Send("UNSUBSCRIBE\nid:0\nreceipt:u\n\n\x00")
	a.Expect("RECEIPT")
	subscribeRaw(t, ts.url, "/topic/room")
	refused()

	_ = b.WS.CloseNow()
	waitFor(t, func() bool { return ts.cfg.Broker.Subscribers("/topic/room") == 1 })
	subscribeRaw(t, ts.url, "/topic/room")
	refused()
	if n := ts.obs.count(ts.obs.capRefused, "room"); n != 3 {
		t.Errorf("capRefused{room} = %d, want 3", n)
	}
}

// TestSubscriberCapConcurrent has 12 sessions SUBSCRIBE at once to a
// destination capped at 3: exactly 3 get their RECEIPT, the others ERROR,
// and the destination holds 3 (the broker's own test checks it never
// holds more on the way).
func TestSubscriberCapConcurrent(t *testing.T) {
	const max, clients = 3, 12
	ts := startServer(t, Config{Destinations: stateRules(max)})
	conns := make([]*rawClient, clients)
	for i := range conns {
		conns[i] = dialRaw(t, ts.url)
		conns[i].Connect()
	}
	results := make(chan string, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := c.WS.Write(t.Context(), websocket.MessageText, []byte("SUBSCRIBE\nid:0\ndestination:/topic/room\nreceipt:s\n\n\x00")); err != nil {
				results <- err.Error()
				return
			}
			f, err := c.Next(10 * time.Second)
			if err != nil {
				results <- err.Error()
				return
			}
			results <- f.Command
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	got := map[string]int{}
	for r := range results {
		got[r]++
	}
	if got["RECEIPT"] != max || got["ERROR"] != clients-max {
		t.Errorf("answers %v, want %d RECEIPT and %d ERROR", got, max, clients-max)
	}
	if n := ts.cfg.Broker.Subscribers("/topic/room"); n != max {
		t.Errorf("Subscribers = %d, want %d", n, max)
	}
}

// memorySlots is a SubscriberSlots two servers share, as instances share
// a store; with fail set it cannot decide.
type memorySlots struct {
	mu   sync.Mutex
	held map[string]int
	fail bool
}

func (m *memorySlots) Acquire(_ context.Context, dest string, max int) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return nil, false, errors.New("store unreachable")
	}
	if m.held[dest] >= max {
		return nil, false, nil
	}
	m.held[dest]++
	released := false
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if released {
			panic("released twice")
		}
		released = true
		m.held[dest]--
	}, true, nil
}

func (m *memorySlots) heldOf(dest string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[dest]
}

// TestSubscriberSlots caps /topic/room at 2 across two servers sharing
// their slots: one subscriber on each fills it, a third on either is
// refused, an UNSUBSCRIBE and a dropped connection each give their place
// back, and a store that cannot decide leaves each server its own cap.
func TestSubscriberSlots(t *testing.T) {
	slots := &memorySlots{held: map[string]int{}}
	a := startServer(t, Config{Destinations: stateRules(2), SubscriberSlots: slots})
	b := startServer(t, Config{Destinations: stateRules(2), SubscriberSlots: slots})
	refused := func(ts *testServer) {
		t.Helper()
		c := dialRaw(t, ts.url)
		c.Connect()
		c.Send("SUBSCRIBE\nid:0\ndestination:/topic/room\nreceipt:r\n\n\x00")
		if f := c.Expect("ERROR"); f.Get("message") != "subscriber limit reached" || f.Get("receipt-id") != "r" {
			t.Errorf("ERROR %v, want subscriber limit reached for receipt r", f.Headers)
		}
		c.ExpectClosed()
	}
	onA := subscribeRaw(t, a.url, "/topic/room")
	onB := subscribeRaw(t, b.url, "/topic/room")
	refused(a)
	refused(b)
	if n := slots.heldOf("/topic/room"); n != 2 {
		t.Fatalf("slots held %d, want 2", n)
	}

	onA.Send("UNSUBSCRIBE\nid:0\nreceipt:u\n\n\x00")
	onA.Expect("RECEIPT")
	if n := slots.heldOf("/topic/room"); n != 1 {
		t.Fatalf("slots held %d after UNSUBSCRIBE, want 1", n)
	}
	subscribeRaw(t, a.url, "/topic/room")
	refused(b)

	_ = onB.WS.CloseNow()
	waitFor(t, func() bool { return slots.heldOf("/topic/room") == 1 })
	subscribeRaw(t, b.url, "/topic/room")
	refused(a)

	// Without a store's answer, b decides alone: it holds 1 of its 2.
	slots.mu.Lock()
	slots.fail = true
	slots.mu.Unlock()
	subscribeRaw(t, b.url, "/topic/room")
	refused(b)
}

// TestLatestUserDestination: a user destination can be latest-value too;
// the waiting MESSAGE is the newest and carries the destination the
// client subscribed to.
func TestLatestUserDestination(t *testing.T) {
	ts := startListeningServer(t, Config{
		SocketSendBuffer: minSocketSendBuffer, WriteTimeout: time.Minute,
		Destinations: func(dest string) DestinationOptions {
			return DestinationOptions{Rule: "mine", Latest: dest == "/user/queue/state"}
		},
	}, nil)
	_, id := dialStuck(t, ts.url, "/user/queue/state")
	body := []byte(strings.Repeat("u", 4<<10))
	const states = 200
	for i := range states {
		copy(body, fmt.Sprintf("%06d", i))
		if _, n := ts.Publish(UserDestination("anonymous-"+id, "state"), nil, body); n != 1 {
			t.Fatalf("state %d delivered to %d, want 1", i, n)
		}
	}
	s := ts.session(t, id)
	s.box.mu.Lock()
	q := slices.Clone(s.box.queue)
	s.box.mu.Unlock()
	if len(q) != 1 || string(q[0].msg.Body()[:6]) != fmt.Sprintf("%06d", states-1) || q[0].msg.Destination != "/user/queue/state" {
		t.Fatalf("queue %d items, want 1: the newest state to /user/queue/state", len(q))
	}
	if n := ts.obs.count(ts.obs.replaced, "mine"); n < states-20 {
		t.Errorf("replaced{mine} = %d, want most of the %d states", n, states)
	}
}
