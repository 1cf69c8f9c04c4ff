package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stompgate/stompgate/internal/poll"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// latencyObserver counts the MESSAGEs a server timed, by path.
type latencyObserver struct {
	countingObserver
	lmu     sync.Mutex
	written map[string]int
	bad     int // a queue wait longer than its latency
}

var _ DeliveryObserver = (*latencyObserver)(nil)

func (o *latencyObserver) MessageWritten(path string, latency, queued time.Duration) {
	o.lmu.Lock()
	defer o.lmu.Unlock()
	if o.written == nil {
		o.written = map[string]int{}
	}
	o.written[path]++
	if queued > latency {
		o.bad++
	}
}

func (o *latencyObserver) count(path string) (n, bad int) {
	o.lmu.Lock()
	defer o.lmu.Unlock()
	return o.written[path], o.bad
}

// A subscriber that reads nothing while a publisher sends it a backlog
// of SENDs, packed many to a WebSocket message, has them written in
// batches by its writer goroutine, several writes per batch; a program's
// Publish to it goes the same way. Every MESSAGE is timed exactly once,
// under its path, and none waited in the queue longer than it took to
// deliver.
func TestDeliveryTimedOncePerMessage(t *testing.T) {
	obs := &latencyObserver{countingObserver: countingObserver{closed: map[string]int{}, protocol: map[string]int{}, replaced: map[string]int{}, capRefused: map[string]int{}}}
	ts := startServer(t, Config{Observer: obs, OutboundQueue: 1 << 20, OutboundBytes: 1 << 30, WriteTimeout: time.Minute})
	sub := dialRaw(t, ts.url)
	sub.Connect()
	sub.Send("SUBSCRIBE\nid:0\ndestination:/topic/t\nreceipt:s\n\n\x00")
	sub.Expect("RECEIPT")
	pub := dialRaw(t, ts.url)
	pub.Connect()

	const sends, published = 600, 50
	body := strings.Repeat("b", 1000)
	var msg strings.Builder
	for i := range sends {
		fmt.Fprintf(&msg, "SEND\ndestination:/topic/t\n\n%s\x00", body)
		if msg.Len() > 48<<10 || i == sends-1 {
			pub.Send(msg.String())
			msg.Reset()
		}
	}
	pub.Send("SEND\ndestination:/topic/other\nreceipt:r\n\n\x00")
	pub.Expect("RECEIPT")
	for range published {
		ts.Publish("/topic/t", nil, []byte(body))
	}

	dec := stompframe.NewDecoder(stompframe.Limits{MaxFrameSize: 1 << 20})
	for got := 0; got < sends+published; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, b, err := sub.WS.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", got, sends+published, err)
		}
		dec.Feed(b)
		for {
			f, err := dec.Next()
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				break
			}
			got++
		}
	}
	poll.Until(t, 10*time.Second, func() error {
		local, _ := obs.count(outcome.DeliveryLocal)
		api, _ := obs.count(outcome.DeliveryAPI)
		if local != sends || api != published {
			return fmt.Errorf("timed local %d, api %d; want %d, %d", local, api, sends, published)
		}
		return nil
	})
	if relay, bad := obs.count(outcome.DeliveryRelay); relay != 0 || bad != 0 {
		t.Errorf("timed relay %d, queue wait above latency %d times; want 0, 0", relay, bad)
	}
}
