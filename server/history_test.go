package server

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/stompframe"
)

// recoveryObserver records a HistoryObserver's events.
type recoveryObserver struct {
	mu       sync.Mutex
	outcomes []string // "true" or the reason
	replayed int
	gaps     []history.Reason
}

func (o *recoveryObserver) Recovery(recovered bool, reason history.Reason, replayed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if recovered {
		o.outcomes = append(o.outcomes, "true")
	} else {
		o.outcomes = append(o.outcomes, string(reason))
	}
	o.replayed += replayed
}

func (o *recoveryObserver) RecoveryGap(reason history.Reason) {
	o.mu.Lock()
	o.gaps = append(o.gaps, reason)
	o.mu.Unlock()
}

// startHistoryServer serves /topic/h.* with a memory history.
func startHistoryServer(t *testing.T) (*testServer, *history.MemoryStore, *recoveryObserver) {
	t.Helper()
	store, err := history.NewMemoryStore(history.MemoryConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := history.NewReader(history.ReaderConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	b := broker.New()
	obs := &recoveryObserver{}
	ts := startServer(t, Config{Broker: b,
		Destinations: func(dest string) DestinationOptions {
			if strings.HasPrefix(dest, "/topic/h.") {
				return DestinationOptions{Rule: "h", History: &history.Retention{}}
			}
			return DestinationOptions{}
		},
		History: History{Log: NewMemoryHistory(store, b), Reader: reader, Observer: obs},
	})
	return ts, store, obs
}

// expectMessage reads the next frame of c, which must be a MESSAGE with
// body and offset.
func expectMessage(t *testing.T, c *rawClient, body, offset string) *stompframe.Frame {
	t.Helper()
	f := c.Expect("MESSAGE")
	if string(f.Body) != body || f.Get(history.HeaderOffset) != offset {
		t.Fatalf("MESSAGE %q at offset %q, want %q at %q", f.Body, f.Get(history.HeaderOffset), body, offset)
	}
	return f
}

// TestHistoryGapRecovers: a live message that skips offsets (two were
// lost on their way, though the history has them) is held while the
// subscription recovers from the last offset it delivered; the client
// gets the two it missed, then the held one, in order, and the outcome
// on the first of them.
func TestHistoryGapRecovers(t *testing.T) {
	ts, store, obs := startHistoryServer(t)
	const dest = "/topic/h.room"
	c := dialRaw(t, ts.url)
	c.Connect()
	c.Send("SUBSCRIBE\nid:a\ndestination:" + dest + "\nx-stream-offset:next\nreceipt:r\n\n\x00")
	r := c.Expect("RECEIPT")
	if r.Get("receipt-id") != "r" || r.Get(history.HeaderRecovered) != "true" {
		t.Fatalf("RECEIPT %q recovered %q, want r true", r.Get("receipt-id"), r.Get(history.HeaderRecovered))
	}
	ts.Publish(dest, nil, []byte("one"))
	epoch := expectMessage(t, c, "one", "1").Get(history.HeaderEpoch)

	// Two messages reach the history but not the subscriber.
	for _, body := range []string{"two", "three"} {
		f := stompframe.Frame{Command: stompframe.CommandSend, Body: []byte(body)}
		f.Add("destination", dest)
		if _, err := store.Append(context.Background(), dest, encodeEntry(broker.NewMessage("x", &f)), history.Retention{}); err != nil {
			t.Fatal(err)
		}
	}
	ts.Publish(dest, nil, []byte("four"))
	f := expectMessage(t, c, "two", "2")
	if f.Get(history.HeaderRecovered) != "true" || f.Get(history.HeaderEpoch) != epoch {
		t.Errorf("first MESSAGE after the gap: recovered %q epoch %q, want true %q", f.Get(history.HeaderRecovered), f.Get(history.HeaderEpoch), epoch)
	}
	expectMessage(t, c, "three", "3")
	if f := expectMessage(t, c, "four", "4"); f.Get(history.HeaderRecovered) != "" {
		t.Errorf("the held MESSAGE carries recovered %q too", f.Get(history.HeaderRecovered))
	}
	ts.Publish(dest, nil, []byte("five"))
	expectMessage(t, c, "five", "5")

	obs.mu.Lock()
	defer obs.mu.Unlock()
	// The second read holds the held message too: it is replayed, and
	// its live copy dropped.
	if want := []string{"true", "true"}; strings.Join(obs.outcomes, ",") != strings.Join(want, ",") || obs.replayed != 3 {
		t.Errorf("recoveries %q replaying %d, want %q replaying 3", obs.outcomes, obs.replayed, want)
	}
	if len(obs.gaps) != 1 || obs.gaps[0] != history.ReasonGap {
		t.Errorf("gaps %q, want one gap", obs.gaps)
	}
}

// TestHistoryRecoveryBounds: a replay that would not fit the session's
// outbound queue is refused as too_many without being decoded, and a
// client cannot set position headers on a SEND.
func TestHistoryRecoveryBounds(t *testing.T) {
	ts, _, obs := startHistoryServer(t)
	const dest = "/topic/h.big"
	body := []byte(strings.Repeat("m", 5000))
	for range 1000 {
		ts.Publish(dest, []stompframe.Header{{Name: history.HeaderOffset, Value: "7"}}, body)
	}
	c := dialRaw(t, ts.url)
	c.Connect()
	// DefaultOutboundBytes is 4 MiB: a replay of 1,000 messages of 5,000
	// bytes does not fit.
	c.Send("SUBSCRIBE\nid:a\ndestination:" + dest + "\nx-stream-offset:first\nreceipt:r\n\n\x00")
	r := c.Expect("RECEIPT")
	if r.Get(history.HeaderRecovered) != "false" || r.Get(history.HeaderRecoveryReason) != string(history.ReasonTooMany) {
		t.Errorf("RECEIPT recovered %q reason %q, want false too_many", r.Get(history.HeaderRecovered), r.Get(history.HeaderRecoveryReason))
	}
	ts.Publish(dest, nil, []byte("live"))
	f := expectMessage(t, c, "live", "1001")
	if f.Get(history.HeaderRecoveryReason) != string(history.ReasonTooMany) {
		t.Errorf("first MESSAGE reason %q, want too_many", f.Get(history.HeaderRecoveryReason))
	}
	if n := len(strings.Split(string(stompframe.Append(nil, f, stompframe.V12)), history.HeaderOffset+":")) - 1; n != 1 {
		t.Errorf("MESSAGE carries %d offsets, want 1 (the server's)", n)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.replayed != 0 {
		t.Errorf("replayed %d, want 0", obs.replayed)
	}
}

// TestReplayCacheBounds: the cache of decoded replays empties when one
// more entry would pass its count or its bytes, and knows an entry by its
// data, not by equal bytes.
func TestReplayCacheBounds(t *testing.T) {
	m := func(id string) *broker.Message { return broker.NewMessageParts(id, "/topic/h.x", nil, nil) }
	a, b, c := []byte("aaaa"), []byte("bbbb"), []byte("cccccccc")
	rc := newReplayCache(2, 12)
	rc.put(a, m("a"))
	rc.put(b, m("b"))
	if rc.get(a) == nil || rc.get(b) == nil {
		t.Fatal("entries within the bounds are not kept")
	}
	if rc.get([]byte("aaaa")) != nil {
		t.Error("an equal copy of an entry's data finds it")
	}
	rc.put(c, m("c")) // a third entry: over the count
	if rc.get(a) != nil || rc.get(b) != nil || rc.get(c) == nil {
		t.Error("over the count, the cache did not start again with the new entry alone")
	}
	rc.put(a, m("a")) // 8 + 4 bytes fits 12
	rc.put(b, m("b")) // 16 would not, nor would a third entry
	if rc.get(c) != nil || rc.get(a) != nil || rc.get(b) == nil {
		t.Error("over the bytes, the cache did not start again with the new entry alone")
	}
	var none *replayCache
	none.put(a, m("a"))
	if none.get(a) != nil {
		t.Error("a nil cache holds something")
	}
}
