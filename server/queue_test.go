package server

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/stompgate/stompgate/broker"
)

// TestQueuesAreReusedAcrossWrites writes to one session over and over, as
// publishers' readers do: each write must take the session's outbound
// queue from the pool, not grow a new one.
func TestQueuesAreReusedAcrossWrites(t *testing.T) {
	ts := startServer(t, Config{})
	sub := dialRaw(t, ts.url)
	id := sub.Connect().Get("session")
	s := ts.session(t, id)
	// The writer that sent CONNECTED may not have seen its queue empty
	// yet; writes made meanwhile would only queue behind it.
	waitFor(t, func() bool {
		s.box.mu.Lock()
		defer s.box.mu.Unlock()
		return !s.box.writing
	})
	var b broker.Batch
	write := func() {
		s.box.mu.Lock()
		p := s.box.pushLocked(outItem{raw: heartBeatEOL}, len(heartBeatEOL))
		s.box.mu.Unlock()
		s.startWriter(p, &b)
		b.Flush()
	}
	write() // the batch's own slice grows once
	allocs := testing.AllocsPerRun(200, write)
	// Under the race detector sync.Pool drops a quarter of what it is
	// given; a queue grown per write is one allocation each.
	if allocs >= 0.5 {
		t.Errorf("%.2f allocations per write, want the queue from the pool", allocs)
	}
	s.box.mu.Lock()
	writing, queued := s.box.writing, len(s.box.queue)+s.box.inflight
	s.box.mu.Unlock()
	if writing || queued != 0 {
		t.Errorf("after the writes: writing %v, %d frames held; want an idle session", writing, queued)
	}
}

// TestQueuesStayTheirOwn has publishers flood their own topics at once,
// each read by one subscriber, so that queues go back to the pool and out
// again on every side: each subscriber must get exactly its publisher's
// messages, in order.
func TestQueuesStayTheirOwn(t *testing.T) {
	const pairs, each = 8, 400
	ts := startServer(t, Config{OutboundQueue: 1 << 16, OutboundBytes: 1 << 30})
	subs := make([]*tcpSession, pairs)
	pubs := make([]*tcpSession, pairs)
	for i := range pairs {
		subs[i] = dialTCP(t, ts.url)
		connectTCP(t, subs[i])
		subscribeTCP(t, subs[i], fmt.Sprintf("/topic/own.%d", i))
		pubs[i] = dialTCP(t, ts.url)
		connectTCP(t, pubs[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, pairs)
	for i, p := range pubs {
		var buf bytes.Buffer
		for n := range each {
			buf.Write(maskedFrame(0x81, fmt.Appendf(nil, "SEND\ndestination:/topic/own.%d\n\np%d-%d\x00", i, i, n)))
		}
		wg.Go(func() {
			if _, err := p.nc.Write(buf.Bytes()); err != nil {
				errs <- err
			}
		})
	}
	for i, sub := range subs {
		for n, f := range stompFrames(t, sub, each) {
			if want := fmt.Sprintf("p%d-%d", i, n); string(f.Body) != want || f.Get("destination") != fmt.Sprintf("/topic/own.%d", i) {
				t.Fatalf("subscriber %d, message %d: %q to %s, want %q", i, n, f.Body, f.Get("destination"), want)
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
