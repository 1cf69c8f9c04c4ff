package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-stomp/stomp/v3"
	"github.com/go-stomp/stomp/v3/frame"
	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/internal/stomptest"
	"github.com/stompgate/stompgate/internal/testredis"
	"github.com/stompgate/stompgate/outcome"
)

// historyRules keeps 10,000 messages of /topic/chat.* and 10 of
// /topic/small.* for ten minutes, beside the test policy's zones; the
// flags let one publisher send thousands of messages quickly.
func historyRules(t *testing.T, args ...string) (appOptions, []string) {
	t.Helper()
	rules := testPolicy + `
destinations:
  - name: chat
    pattern: /topic/chat.*
    history: {keep: 10000, for: 10m}
  - name: small
    pattern: /topic/small.*
    history: {keep: 10}
`
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	return appOptions{env: map[string]string{"WSSERVER_POLICY": path}},
		append([]string{"-send-limit", "1000000", "-inbound-frames", "1000000", "-inbound-bytes", "100000000"}, args...)
}

// position is a MESSAGE's position headers.
type position struct {
	offset uint64
	epoch  string
}

// positionOf reads msg's position, failing the test without one.
func positionOf(t *testing.T, msg *stomp.Message) position {
	t.Helper()
	off, err := strconv.ParseUint(msg.Header.Get(history.HeaderOffset), 10, 64)
	epoch := msg.Header.Get(history.HeaderEpoch)
	if err != nil || off == 0 || epoch == "" {
		t.Fatalf("MESSAGE %q has no position: x-stream-offset %q, x-stream-epoch %q", msg.Body, msg.Header.Get(history.HeaderOffset), epoch)
	}
	return position{off, epoch}
}

// sendBodies sends "<prefix><i>" for i in [from, from+n) to dest.
func sendBodies(t *testing.T, c *stomp.Conn, dest, prefix string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := c.Send(dest, "text/plain", []byte(prefix+strconv.Itoa(i)), nil); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
}

// subscribeAt subscribes c to dest from a position (offset and epoch as
// headers; an empty epoch is left out).
func subscribeAt(t *testing.T, c *stomp.Conn, dest, offset, epoch string) *stomp.Subscription {
	t.Helper()
	opts := []func(*frame.Frame) error{stomp.SubscribeOpt.Header(history.HeaderOffset, offset)}
	if epoch != "" {
		opts = append(opts, stomp.SubscribeOpt.Header(history.HeaderEpoch, epoch))
	}
	sub, err := c.Subscribe(dest, stomp.AckAuto, opts...)
	if err != nil {
		t.Fatalf("SUBSCRIBE %s from %s/%s: %v", dest, offset, epoch, err)
	}
	return sub
}

// roundTrip waits until the server handled everything c sent before (its
// SUBSCRIBEs among them): a SEND with a receipt is answered in order.
func roundTrip(t *testing.T, c *stomp.Conn) {
	t.Helper()
	if err := c.Send("/topic/sync", "text/plain", nil, stomp.SendOpt.Receipt); err != nil {
		t.Fatalf("SEND with receipt: %v", err)
	}
}

// waitAppended waits until the instances at bases appended want history
// messages in all.
func waitAppended(t *testing.T, want float64, bases ...string) {
	t.Helper()
	waitFor(t, clientTimeout, func() error {
		got := 0.0
		for _, b := range bases {
			got += scrape(t, b)["stompgate_history_appended_total"]
		}
		if got < want {
			return fmt.Errorf("history_appended_total = %v, want %v", got, want)
		}
		return nil
	})
}

// checkRun checks that msgs are the bodies prefix<first>... in order
// with contiguous offsets from pos in its epoch, none twice.
func checkRun(t *testing.T, msgs []*stomp.Message, prefix string, first int, pos position) {
	t.Helper()
	for i, m := range msgs {
		p := positionOf(t, m)
		if want := (position{pos.offset + uint64(i), pos.epoch}); p != want {
			t.Fatalf("message %d: position %+v, want %+v", i, p, want)
		}
		if want := prefix + strconv.Itoa(first+i); string(m.Body) != want {
			t.Fatalf("message %d at offset %d: body %q, want %q", i, p.offset, m.Body, want)
		}
	}
}

// readMessages reads n messages of sub.
func readMessages(t *testing.T, sub *stomp.Subscription, n int) []*stomp.Message {
	t.Helper()
	out := make([]*stomp.Message, 0, n)
	for range n {
		out = append(out, nextMessage(t, sub))
	}
	return out
}

// TestHistoryRecoveryAcrossInstances: a subscriber on instance b that
// goes away while 1,000 messages are published on instance a comes back
// to b with its last offset and epoch and gets exactly those 1,000, in
// order, none twice, the first marked recovered:true, then live ones.
// A position older than the history (/topic/small.*, 10 kept) is
// recovered:false (trimmed), on the RECEIPT and the first MESSAGE.
func TestHistoryRecoveryAcrossInstances(t *testing.T) {
	const missed = 1000
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	o, args := historyRules(t, "-redis-url", rs.URL(), "-relay", "redis")
	var c cluster
	for range 2 {
		base, a := startAppWith(t, o, args...)
		c.bases, c.apps = append(c.bases, base), append(c.apps, a)
	}
	const dest = "/topic/chat.lobby"
	pub := dialStomp(t, wsURL(c.bases[0]))

	first := dialStomp(t, wsURL(c.bases[1]))
	sub := subscribeAt(t, first, dest, "next", "")
	c.waitRelaySubscribed(t, rdb, dest, false)
	sendBodies(t, pub, dest, "m", 0, 1)
	m := nextMessage(t, sub)
	if got := m.Header.Get(history.HeaderRecovered); got != "true" {
		t.Errorf("first MESSAGE after next: recovered %q, want true", got)
	}
	last := positionOf(t, m)
	disconnect(t, first)

	sendBodies(t, pub, dest, "m", 1, missed)
	waitAppended(t, 1+missed, c.bases...)

	back := dialStomp(t, wsURL(c.bases[1]))
	sub = subscribeAt(t, back, dest, strconv.FormatUint(last.offset+1, 10), last.epoch)
	msgs := readMessages(t, sub, missed)
	checkRun(t, msgs, "m", 1, position{last.offset + 1, last.epoch})
	if got := msgs[0].Header.Get(history.HeaderRecovered); got != "true" {
		t.Errorf("first replayed MESSAGE: recovered %q (%s), want true", got, msgs[0].Header.Get(history.HeaderRecoveryReason))
	}
	if msgs[1].Header.Get(history.HeaderRecovered) != "" {
		t.Error("the second MESSAGE carries recovered too; only the first should")
	}
	c.waitRelaySubscribed(t, rdb, dest, false)
	sendBodies(t, pub, dest, "m", 1+missed, 3)
	checkRun(t, readMessages(t, sub, 3), "m", 1+missed, position{last.offset + 1 + missed, last.epoch})
	select {
	case extra := <-sub.C:
		t.Fatalf("a MESSAGE beyond the live ones: %q at %q", extra.Body, extra.Header.Get(history.HeaderOffset))
	case <-time.After(200 * time.Millisecond):
	}

	// Trimmed: 10 kept (Redis trims whole nodes of its streams, about 100
	// entries, so somewhat more stay), 300 missed.
	const small = "/topic/small.room"
	rc := stomptest.DialRaw(t, wsURL(c.bases[1]))
	rc.Connect()
	rc.Send("SUBSCRIBE\nid:s\ndestination:" + small + "\nx-stream-offset:next\nreceipt:r1\n\n\x00")
	if r := rc.Expect("RECEIPT"); r.Get(history.HeaderRecovered) != "true" {
		t.Errorf("RECEIPT of SUBSCRIBE next: recovered %q, want true", r.Get(history.HeaderRecovered))
	}
	c.waitRelaySubscribed(t, rdb, small, false)
	sendBodies(t, pub, small, "s", 0, 1)
	f := rc.Expect("MESSAGE")
	epoch := f.Get(history.HeaderEpoch)
	off, _ := strconv.ParseUint(f.Get(history.HeaderOffset), 10, 64)
	rc.Send("UNSUBSCRIBE\nid:s\n\n\x00")
	sendBodies(t, pub, small, "s", 1, 300)
	waitAppended(t, 1+missed+3+1+300, c.bases...)
	rc.Send(fmt.Sprintf("SUBSCRIBE\nid:t\ndestination:%s\nx-stream-offset:%d\nx-stream-epoch:%s\nreceipt:r2\n\n\x00", small, off+1, epoch))
	r := rc.Expect("RECEIPT")
	if r.Get(history.HeaderRecovered) != "false" || r.Get(history.HeaderRecoveryReason) != string(history.ReasonTrimmed) {
		t.Errorf("RECEIPT of a trimmed position: recovered %q reason %q, want false trimmed", r.Get(history.HeaderRecovered), r.Get(history.HeaderRecoveryReason))
	}
	c.waitRelaySubscribed(t, rdb, small, false)
	sendBodies(t, pub, small, "s", 301, 1)
	f = rc.Expect("MESSAGE")
	if f.Get(history.HeaderRecovered) != "false" || f.Get(history.HeaderRecoveryReason) != string(history.ReasonTrimmed) || string(f.Body) != "s301" {
		t.Errorf("first MESSAGE after a trimmed position: %q recovered %q reason %q, want s301 false trimmed", f.Body, f.Get(history.HeaderRecovered), f.Get(history.HeaderRecoveryReason))
	}

	s := scrape(t, c.bases[1])
	if got := s.sum("stompgate_history_recoveries_total", `result="not_recovered"`, `reason="trimmed"`); got != 1 {
		t.Errorf(`recoveries_total{not_recovered, trimmed} = %v, want 1`, got)
	}
	if got := s.sum("stompgate_history_recoveries_total", `result="recovered"`); got != 3 {
		t.Errorf(`recoveries_total{recovered} = %v, want 3`, got)
	}
	if got := s["stompgate_history_replayed_messages_total"]; got != missed {
		t.Errorf("replayed_messages_total = %v, want %d", got, missed)
	}
}

// TestHistoryEpochChanged: after Redis restarts empty, a position of the
// old epoch is recovered:false epoch_changed (unavailable while Redis is
// still coming back), on the RECEIPT, counted.
func TestHistoryEpochChanged(t *testing.T) {
	rs := testredis.Start(t)
	o, args := historyRules(t, "-redis-url", rs.URL(), "-relay", "redis")
	base, _ := startAppWith(t, o, args...)
	const dest = "/topic/chat.epoch"
	pub := dialStomp(t, wsURL(base))
	sendBodies(t, pub, dest, "e", 0, 5)
	waitAppended(t, 5, base)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	meta, err := rdb.Keys(t.Context(), "*hist*"+dest+"*:m").Result()
	if err != nil || len(meta) != 1 {
		t.Fatalf("meta key of %s: %q, %v", dest, meta, err)
	}
	old, err := rdb.HGet(t.Context(), meta[0], "e").Result()
	if err != nil {
		t.Fatal(err)
	}

	rs.Restart()
	// The relay and the history come back on their own; publishes in
	// between may be lost, which is what the epoch says.
	back := stomptest.DialRaw(t, wsURL(base))
	back.Connect()
	back.Send(fmt.Sprintf("SUBSCRIBE\nid:a\ndestination:%s\nx-stream-offset:4\nx-stream-epoch:%s\nreceipt:r\n\n\x00", dest, old))
	r := back.Expect("RECEIPT")
	if r.Get(history.HeaderRecovered) != "false" {
		t.Fatalf("RECEIPT after a Redis restart: recovered %q reason %q, want false", r.Get(history.HeaderRecovered), r.Get(history.HeaderRecoveryReason))
	}
	if got := r.Get(history.HeaderRecoveryReason); got != string(history.ReasonEpochChanged) && got != string(history.ReasonUnavailable) {
		t.Fatalf("RECEIPT after a Redis restart: reason %q, want epoch_changed (or unavailable while Redis comes back)", got)
	}
	// Once Redis answers, a fresh subscription from the old position
	// is told the epoch changed.
	waitFor(t, clientTimeout, func() error {
		c := stomptest.DialRaw(t, wsURL(base))
		c.Connect()
		c.Send(fmt.Sprintf("SUBSCRIBE\nid:a\ndestination:%s\nx-stream-offset:4\nx-stream-epoch:%s\nreceipt:r\n\n\x00", dest, old))
		r := c.Expect("RECEIPT")
		if got := r.Get(history.HeaderRecoveryReason); got != string(history.ReasonEpochChanged) {
			return fmt.Errorf("reason %q, want epoch_changed", got)
		}
		return nil
	})
	if got := scrape(t, base).sum("stompgate_history_recoveries_total", `reason="epoch_changed"`); got < 1 {
		t.Errorf(`recoveries_total{reason="epoch_changed"} = %v, want at least 1`, got)
	}
}

// TestHistoryRecoveryUnderLoad: while a publisher on instance a sends as
// fast as it can, subscribers on instance b recover from a position 200
// messages back: each gets every offset from it to the publisher's last
// exactly once, in order (replay, held live messages and live ones
// spliced), with no gap.
func TestHistoryRecoveryUnderLoad(t *testing.T) {
	const before, during, back, clients = 300, 3000, 200, 3
	rs := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	// A publisher without a send limit outruns a read by thousands of
	// messages: the live messages held meanwhile and the replay must fit
	// the recovering session's outbound queue.
	o, args := historyRules(t, "-redis-url", rs.URL(), "-relay", "redis",
		"-outbound-queue", "16384", "-outbound-bytes", "16777216", "-recovery-buffer", "10000", "-recovery-buffer-bytes", "8388608", "-recovery-max", "10000")
	var c cluster
	for range 2 {
		base, a := startAppWith(t, o, args...)
		c.bases, c.apps = append(c.bases, base), append(c.apps, a)
	}
	const dest = "/topic/chat.busy"
	pub := dialStomp(t, wsURL(c.bases[0]))
	watcher := dialStomp(t, wsURL(c.bases[1]))
	wsub := subscribeAt(t, watcher, dest, "next", "")
	c.waitRelaySubscribed(t, rdb, dest, false)
	sendBodies(t, pub, dest, "x", 0, before)
	first := positionOf(t, nextMessage(t, wsub))
	var seen atomic.Uint64 // the watcher's latest offset
	seen.Store(first.offset)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case m := <-wsub.C:
				if m != nil && m.Err == nil {
					if off, err := strconv.ParseUint(m.Header.Get(history.HeaderOffset), 10, 64); err == nil {
						seen.Store(off)
					}
				}
			case <-done:
				return
			}
		}
	}()
	waitFor(t, clientTimeout, func() error {
		if got := seen.Load(); got < first.offset+before-1 {
			return fmt.Errorf("watcher at offset %d, want %d", got, first.offset+before-1)
		}
		return nil
	})
	var sent atomic.Int64
	go func() {
		defer wg.Done()
		for i := before; i < before+during; i++ {
			if err := pub.Send(dest, "text/plain", []byte("x"+strconv.Itoa(i)), nil); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			sent.Add(1)
		}
	}()

	// Recover while the publisher runs, each from 200 messages back.
	results := make([][]*stomp.Message, clients)
	starts := make([]uint64, clients)
	var rwg sync.WaitGroup
	for k := range clients {
		for sent.Load() < int64((k+1)*during/(clients+2)) {
			time.Sleep(time.Millisecond)
		}
		starts[k] = max(seen.Load(), first.offset+back) - back
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			conn := stomptest.Dial(t, wsURL(c.bases[1]))
			sub, err := conn.Subscribe(dest, stomp.AckAuto,
				stomp.SubscribeOpt.Header(history.HeaderOffset, strconv.FormatUint(starts[k], 10)),
				stomp.SubscribeOpt.Header(history.HeaderEpoch, first.epoch))
			if err != nil {
				t.Errorf("client %d: SUBSCRIBE: %v", k, err)
				return
			}
			for {
				select {
				case m := <-sub.C:
					if m == nil || m.Err != nil {
						t.Errorf("client %d: subscription ended: %v", k, m)
						return
					}
					results[k] = append(results[k], m)
					if string(m.Body) == "x"+strconv.Itoa(before+during-1) {
						return
					}
				case <-time.After(clientTimeout):
					t.Errorf("client %d: no message within %v after %d", k, clientTimeout, len(results[k]))
					return
				}
			}
		}()
	}
	rwg.Wait()
	close(done)
	wg.Wait()
	for k, msgs := range results {
		if len(msgs) == 0 {
			continue
		}
		t.Logf("client %d: %d messages from offset %d, recovered %q %s", k, len(msgs), starts[k],
			msgs[0].Header.Get(history.HeaderRecovered), msgs[0].Header.Get(history.HeaderRecoveryReason))
		if want := int(first.offset + before + during - starts[k]); len(msgs) != want {
			t.Errorf("client %d: %d messages, want %d", k, len(msgs), want)
		}
		if got := msgs[0].Header.Get(history.HeaderRecovered); got != "true" {
			t.Errorf("client %d: recovered %q (%s), want true", k, got, msgs[0].Header.Get(history.HeaderRecoveryReason))
		}
		checkRun(t, msgs, "x", int(starts[k]-first.offset), position{starts[k], first.epoch})
	}
	s := scrape(t, c.bases[1])
	t.Logf("instance b: reads %v, shared %v, gaps %v, recoveries %v",
		s["stompgate_history_reads_total"], s["stompgate_history_reads_shared_total"], s["stompgate_history_gaps_total"],
		s.sum("stompgate_history_recoveries_total"))
}

// TestHistoryMemory: a single instance without Redis keeps histories in
// memory and recovers from them too; a client's own position headers on
// a SEND are replaced by the server's; a position on a destination
// without history is recovered:false no_history.
func TestHistoryMemory(t *testing.T) {
	const missed = 500
	o, args := historyRules(t)
	base, _ := startAppWith(t, o, args...)
	const dest = "/topic/chat.mem"
	pub := dialStomp(t, wsURL(base))
	c := dialStomp(t, wsURL(base))
	sub := subscribeAt(t, c, dest, "last", "")
	roundTrip(t, c)
	if err := pub.Send(dest, "text/plain", []byte("forged"), nil,
		stomp.SendOpt.Header(history.HeaderOffset, "999"), stomp.SendOpt.Header(history.HeaderEpoch, "fake"),
		stomp.SendOpt.Header(history.HeaderRecovered, "true")); err != nil {
		t.Fatal(err)
	}
	m := nextMessage(t, sub)
	last := positionOf(t, m)
	if last.offset != 1 || last.epoch == "fake" {
		t.Errorf("a SEND with forged position headers arrived at %+v, want offset 1 of the server's epoch", last)
	}
	if n := len(m.Header.GetAll(history.HeaderOffset)); n != 1 {
		t.Errorf("MESSAGE carries %d x-stream-offset headers, want 1", n)
	}
	disconnect(t, c)

	sendBodies(t, pub, dest, "m", 0, missed)
	waitAppended(t, 1+missed, base)
	c = dialStomp(t, wsURL(base))
	sub = subscribeAt(t, c, dest, strconv.FormatUint(last.offset+1, 10), last.epoch)
	msgs := readMessages(t, sub, missed)
	checkRun(t, msgs, "m", 0, position{last.offset + 1, last.epoch})
	if got := msgs[0].Header.Get(history.HeaderRecovered); got != "true" {
		t.Errorf("first replayed MESSAGE: recovered %q, want true", got)
	}
	sendBodies(t, pub, dest, "m", missed, 2)
	checkRun(t, readMessages(t, sub, 2), "m", missed, position{last.offset + 1 + missed, last.epoch})

	plain := subscribeAt(t, c, "/topic/plain", "5", "whatever")
	roundTrip(t, c)
	sendBodies(t, pub, "/topic/plain", "p", 0, 2)
	first, second := nextMessage(t, plain), nextMessage(t, plain)
	if first.Header.Get(history.HeaderRecovered) != "false" || first.Header.Get(history.HeaderRecoveryReason) != string(history.ReasonNoHistory) {
		t.Errorf("first MESSAGE of a destination without history: recovered %q reason %q, want false no_history",
			first.Header.Get(history.HeaderRecovered), first.Header.Get(history.HeaderRecoveryReason))
	}
	if second.Header.Get(history.HeaderRecovered) != "" || first.Header.Get(history.HeaderOffset) != "" {
		t.Error("a destination without history carries positions, or the outcome on its second MESSAGE")
	}

	bad := stomptest.DialRaw(t, wsURL(base))
	bad.Connect()
	bad.Send("SUBSCRIBE\nid:a\ndestination:" + dest + "\nx-stream-offset:soon\n\n\x00")
	if e := bad.Expect("ERROR"); e.Get("message") != "invalid stream position" {
		t.Errorf("SUBSCRIBE with x-stream-offset:soon: ERROR %q, want invalid stream position", e.Get("message"))
	}

	s := scrape(t, base)
	if got := s["stompgate_history_memory_destinations"]; got != 1 {
		t.Errorf("history_memory_destinations = %v, want 1", got)
	}
	if got := s.sum("stompgate_history_recoveries_total", `reason="no_history"`); got != 1 {
		t.Errorf(`recoveries_total{reason="no_history"} = %v, want 1`, got)
	}
}

// TestRecoveryReasonsMatch keeps the metric labels of package outcome
// equal to package history's reasons.
func TestRecoveryReasonsMatch(t *testing.T) {
	var want []string
	for _, r := range history.Reasons {
		want = append(want, string(r))
	}
	if got := outcome.RecoveryReasons(); !slices.Equal(got, want) {
		t.Errorf("outcome.RecoveryReasons() = %q, want history.Reasons %q", got, want)
	}
}

// TestHistoryCluster: on a real Redis Cluster, destinations whose
// histories live on different masters (their keys share the slot of
// their sharded channel) recover across instances: a subscriber on b
// that missed 200 messages of each, published on a, gets them all in
// order, recovered:true.
func TestHistoryCluster(t *testing.T) {
	const missed = 200
	rc := testredis.StartCluster(t)
	o, args := historyRules(t, "-redis-url", rc.URL(), "-relay", "redis")
	var c cluster
	for range 2 {
		base, a := startAppWith(t, o, args...)
		c.bases, c.apps = append(c.bases, base), append(c.apps, a)
	}
	if !c.apps[0].relay.Sharded() {
		t.Fatal("relay on a redis+cluster:// URL is not sharded")
	}
	pub := dialStomp(t, wsURL(c.bases[0]))
	back := dialStomp(t, wsURL(c.bases[1]))
	for i := range 4 {
		dest := fmt.Sprintf("/topic/chat.c%d", i)
		sendBodies(t, pub, dest, "c", 0, missed)
		waitAppended(t, float64((i+1)*missed), c.bases...)
		meta, stream := c.apps[0].history.streams.Keys(dest)
		if tag := c.apps[0].relay.Channel(dest); !strings.Contains(meta, tag[strings.Index(tag, "{"):strings.Index(tag, "}")+1]) || !strings.HasSuffix(stream, ":s") {
			t.Errorf("keys %s, %s do not share the hash tag of channel %s", meta, stream, tag)
		}
		sub := subscribeAt(t, back, dest, "first", "")
		msgs := readMessages(t, sub, missed)
		first := positionOf(t, msgs[0])
		if first.offset != 1 {
			t.Errorf("%s: first replayed offset %d, want 1", dest, first.offset)
		}
		checkRun(t, msgs, "c", 0, first)
		if got := msgs[0].Header.Get(history.HeaderRecovered); got != "true" {
			t.Errorf("%s: recovered %q (%s), want true", dest, got, msgs[0].Header.Get(history.HeaderRecoveryReason))
		}
	}
}
