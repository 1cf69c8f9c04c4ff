package server

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/stompframe"
)

// History and recovery (Config.History): a destination whose options
// give it a history (DestinationOptions.History) has every message
// appended to it before delivery, so that each MESSAGE carries its
// position (history.HeaderOffset, history.HeaderEpoch), and a SUBSCRIBE
// that names a position gets what it missed, in order, once, then live
// messages, or is told plainly that it cannot (recovered:false). Package
// history has the model; this is how a session uses it.
//
// A SUBSCRIBE with a position registers its subscription in the broker
// first, with a historySubscriber in front that holds the live messages
// (a history.Recovery), notes that instant, and reads the history off the
// session's reader through the Reader, which shares reads between the
// subscriptions of one destination. When the read is applied the
// RECEIPT (if asked for) and the first MESSAGE carry recovered and, when
// false, recovery-reason. A live message that skips offsets later (a
// message lost between instances) starts a recovery again from the last
// offset delivered; its outcome goes on the next MESSAGE.

// History configures history and recovery (Config.History). The zero
// value is off: no destination keeps a history, and a SUBSCRIBE with a
// position is told recovered:false, recovery-reason:no_history.
type History struct {
	// Log appends the messages of destinations with history and
	// delivers them, with their positions, to the subscribers of every
	// instance. Nil: off. NewMemoryHistory is the log of a single
	// instance.
	Log HistoryLog
	// Reader reads histories for recoveries; required with Log. Its
	// clock must be time.Now's (ReaderConfig.Now nil).
	Reader *history.Reader
	// MaxBuffer and MaxBufferBytes bound the live messages one
	// recovering subscription holds while its history is read
	// (history.NewRecovery). Zero means history.DefaultMaxBuffer and
	// history.DefaultMaxBufferBytes; negative is an error.
	MaxBuffer, MaxBufferBytes int
	// Observer counts recoveries. Nil: none.
	Observer HistoryObserver
	// replays shares decoded replays (set by Config.withDefaults).
	replays *replayCache
	// LiveWait bounds how long a recovery waits for its destination to
	// be live (HistoryLive) before it reads the history anyway. Zero
	// means DefaultLiveWait; negative is an error.
	LiveWait time.Duration
}

// DefaultLiveWait is History.LiveWait's default: a subscription to a
// Redis channel is confirmed within a round trip; a second leaves room
// for a busy Redis, and the gap a later timeout leaves is still found
// by the next message's offset.
const DefaultLiveWait = time.Second

// liveCheck is how often a recovery looks whether its destination is
// live yet.
const liveCheck = 2 * time.Millisecond

// HistoryLive is a HistoryLog whose delivery to this instance starts some
// time after the broker's registration (relay.Relay: once Redis
// confirmed the channel's subscription). A recovery waits until Live
// reports dest live before it notes the instant its read must follow.
type HistoryLive interface {
	Live(dest string) bool
}

// HistoryLog is where the messages of destinations with history go,
// instead of Config.Relay and the local broker: it appends each to its
// destination's history, which gives it its position, and delivers it
// to every subscriber (on every instance it serves) through the broker,
// with the position headers, in offset order. relay.Relay is the log of
// instances sharing Redis; NewMemoryHistory that of a single instance.
type HistoryLog interface {
	// Append hands m, published to a destination kept as r says, to the
	// history without blocking. It returns how many local subscribers
	// it was delivered to already (0 when delivery comes back later,
	// as with Redis) and false when m was dropped (a full queue).
	Append(m *broker.Message, r history.Retention) (delivered int, ok bool)
	// Decode returns the message a history holds as data for dest,
	// kept as r says: its headers and body, after the checks the log's
	// own delivery makes (for Redis, the signature, with an age bound
	// of r.For plus the live one). ok is false for data that fails
	// them, which the recovery then reports (history.ReasonInvalid).
	Decode(dest string, data []byte, r history.Retention) (headers []stompframe.Header, body []byte, ok bool)
}

// HistoryObserver counts what recoveries do. metrics.Metrics implements
// it through cmd/wsserver.
type HistoryObserver interface {
	// Recovery reports a recovery settled: recovered, or not and why,
	// with the number of messages it replayed.
	Recovery(recovered bool, reason history.Reason, replayed int)
	// RecoveryGap reports a live message that did not follow the one
	// before it (history.Step.Gap), which starts a new recovery.
	RecoveryGap(reason history.Reason)
}

// check validates h (Config.withDefaults).
func (h History) check() error {
	switch {
	case h.Log != nil && h.Reader == nil:
		return configErrorf("History.Reader is required with History.Log")
	case h.MaxBuffer < 0:
		return configErrorf("History.MaxBuffer %d is negative", h.MaxBuffer)
	case h.MaxBufferBytes < 0:
		return configErrorf("History.MaxBufferBytes %d is negative", h.MaxBufferBytes)
	case h.LiveWait < 0:
		return configErrorf("History.LiveWait %v is negative", h.LiveWait)
	}
	return nil
}

// historyOf returns the retention of dest when it keeps a history here.
func (s *Server) historyOf(dest string) (history.Retention, bool) {
	if s.cfg.History.Log == nil || strings.HasPrefix(dest, UserPrefix) {
		return history.Retention{}, false
	}
	r := s.destinationOptions(dest).History
	if r == nil {
		return history.Retention{}, false
	}
	return *r, true
}

// subscribeStart reads the position a SUBSCRIBE asks for: ok false when
// it names none (no HeaderOffset), err when it does not parse.
func subscribeStart(f *stompframe.Frame) (start history.Start, ok bool, err error) {
	off, ok := f.Lookup(history.HeaderOffset)
	if !ok {
		return history.Start{}, false, nil
	}
	start, err = history.ParseStart(off, f.Get(history.HeaderEpoch))
	return start, true, err
}

// recoveredHeaders are the headers that tell a client how its recovery
// ended.
func recoveredHeaders(recovered bool, reason history.Reason) []stompframe.Header {
	if recovered {
		return []stompframe.Header{{Name: history.HeaderRecovered, Value: "true"}}
	}
	return []stompframe.Header{{Name: history.HeaderRecovered, Value: "false"}, {Name: history.HeaderRecoveryReason, Value: string(reason)}}
}

// historySubscriber is a subscription that asked for a position: it
// splices the replay and the live messages (history.Recovery) and puts
// the outcome on the RECEIPT and the next MESSAGE.
type historySubscriber struct {
	s    *session
	sub  *broker.Subscription
	dest string
	ret  history.Retention
	// off: the destination keeps no history; the subscription only
	// carries the no_history outcome to its first MESSAGE.
	off bool

	wg sync.WaitGroup // the recovery goroutine

	// mu guards the fields below. It is taken before the session's
	// outbox lock (Deliver under it), never the other way round.
	mu      sync.Mutex
	rec     *history.Recovery
	held    map[history.Position]*broker.Message // what rec holds, to deliver when it emits them
	pending []stompframe.Header                  // the outcome the next MESSAGE carries
	receipt string                               // the SUBSCRIBE's receipt, sent when the recovery settles
	last    history.Position                     // the last position delivered
	cancel  context.CancelFunc
	stopped bool
}

var _ broker.Subscriber = (*historySubscriber)(nil)

// newRecoveryLocked makes a new recovery, holding held (at heldPos)
// if not nil: a gap's message. Called with mu held, or before the
// subscriber is in the broker.
func (h *historySubscriber) newRecoveryLocked(held *broker.Message, heldPos history.Position) {
	cfg := &h.s.srv.cfg.History
	h.rec = history.NewRecovery(cfg.MaxBuffer, cfg.MaxBufferBytes)
	h.held = make(map[history.Position]*broker.Message)
	if held != nil {
		h.held[heldPos] = held
		h.rec.Live(history.Message{Offset: heldPos.Offset, Epoch: heldPos.Epoch, Data: held.Body()})
	}
}

// readLocked reads the history for h.rec from start, off the reader
// goroutine, and applies it. The subscription must be in the broker
// already, so that every message published from now on reaches Deliver:
// the read shared with it begins after this instant. Called with mu
// held.
func (h *historySubscriber) readLocked(start history.Start) {
	cfg := &h.s.srv.cfg.History
	rec := h.rec
	if h.cancel != nil {
		h.cancel() // a read an overrun made moot
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	subscribed := time.Now()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer cancel()
		if live, ok := cfg.Log.(HistoryLive); ok && !live.Live(h.dest) {
			waitLive(ctx, live, h.dest, cfg.LiveWait)
			subscribed = time.Now()
		}
		res, _ := cfg.Reader.Since(ctx, h.dest, h.ret, start, subscribed)
		msgs, reason := h.decode(res)
		if reason != history.ReasonNone {
			res = history.Result{Reason: reason}
			msgs = nil
		}
		h.apply(rec, res, msgs)
	}()
}

// waitLive waits until dest is live, ctx ends, or wait (zero:
// DefaultLiveWait) passed.
func waitLive(ctx context.Context, live HistoryLive, dest string, wait time.Duration) {
	if wait == 0 {
		wait = DefaultLiveWait
	}
	t := time.NewTicker(liveCheck)
	defer t.Stop()
	deadline := time.Now().Add(wait)
	for !live.Live(dest) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// decode turns res's entries into the MESSAGEs to replay, or says why
// it cannot: one fails the log's checks (history.ReasonInvalid), or they
// would not fit in what the session's outbound queue has room for
// (history.ReasonTooMany), which is checked before anything is decoded
// so that a replay never makes a session hold more than its queue would.
func (h *historySubscriber) decode(res history.Result) ([]*broker.Message, history.Reason) {
	if len(res.Entries) == 0 {
		return nil, history.ReasonNone
	}
	srv := h.s.srv
	total := 0
	for _, e := range res.Entries {
		total += len(e.Data)
	}
	frames, held, _ := h.s.box.held()
	if frames+len(res.Entries) > srv.cfg.OutboundQueue || held+total > srv.cfg.OutboundBytes {
		return nil, history.ReasonTooMany
	}
	out := make([]*broker.Message, len(res.Entries))
	cache := srv.cfg.History.replays
	for i, e := range res.Entries {
		if m := cache.get(e.Data); m != nil {
			out[i] = m
			continue
		}
		hs, body, ok := srv.cfg.History.Log.Decode(h.dest, e.Data, h.ret)
		if !ok {
			return nil, history.ReasonInvalid
		}
		// A Log is an interface: whatever it returns, the position is
		// the server's, as on a live MESSAGE.
		hs = slices.DeleteFunc(hs, func(h stompframe.Header) bool { return broker.Reserved(h.Name) })
		hs = append(slices.Clip(hs), positionOf(history.Position{Offset: e.Offset, Epoch: res.Next.Epoch})...)
		out[i] = broker.NewMessageParts(srv.cfg.Broker.NextID(), h.dest, hs, body)
		cache.put(e.Data, out[i])
	}
	return out, history.ReasonNone
}

// replayCache shares the MESSAGEs decoded from one history read between
// the recoveries it answers (a herd reconnecting to one room), so that
// each retained message is checked and encoded once, not once per
// subscription. An entry is known by its data, which a read shares with
// every recovery it answers and which never changes. It holds at most
// one replay's worth, the outbound queue's bounds (Config.OutboundQueue
// messages, Config.OutboundBytes bytes of data), and empties when full.
type replayCache struct {
	maxEntries, maxBytes int
	mu                   sync.Mutex // guards m and bytes
	m                    map[*byte]*broker.Message
	bytes                int
}

func newReplayCache(maxEntries, maxBytes int) *replayCache {
	return &replayCache{maxEntries: maxEntries, maxBytes: maxBytes, m: make(map[*byte]*broker.Message)}
}

// get returns the message decoded from data, or nil.
func (c *replayCache) get(data []byte) *broker.Message {
	if c == nil || len(data) == 0 {
		return nil
	}
	c.mu.Lock()
	m := c.m[unsafe.SliceData(data)]
	c.mu.Unlock()
	return m
}

// put remembers m as decoded from data.
func (c *replayCache) put(data []byte, m *broker.Message) {
	if c == nil || len(data) == 0 {
		return
	}
	c.mu.Lock()
	if len(c.m) >= c.maxEntries || c.bytes+len(data) > c.maxBytes {
		clear(c.m)
		c.bytes = 0
	}
	c.m[unsafe.SliceData(data)] = m
	c.bytes += len(data)
	c.mu.Unlock()
}

// positionOf returns the position headers of pos.
func positionOf(pos history.Position) []stompframe.Header {
	return []stompframe.Header{
		{Name: history.HeaderOffset, Value: strconv.FormatUint(pos.Offset, 10)},
		{Name: history.HeaderEpoch, Value: pos.Epoch},
	}
}

// messagePosition reads m's position headers, which the log put last.
func messagePosition(m *broker.Message) (history.Position, bool) {
	var pos history.Position
	var off string
	hs := m.Headers()
	for i := len(hs) - 1; i >= 0 && (off == "" || pos.Epoch == ""); i-- {
		switch hs[i].Name {
		case history.HeaderOffset:
			off = hs[i].Value
		case history.HeaderEpoch:
			pos.Epoch = hs[i].Value
		}
	}
	n, err := strconv.ParseUint(off, 10, 64)
	if err != nil || n == 0 || pos.Epoch == "" {
		return history.Position{}, false
	}
	pos.Offset = n
	return pos, true
}

// apply settles the recovery with res: the RECEIPT, then the replay
// (msgs), then the live messages held that follow it.
func (h *historySubscriber) apply(rec *history.Recovery, res history.Result, msgs []*broker.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.rec != rec {
		return // ended, or replaced after an overrun and a gap
	}
	st := h.rec.Apply(res)
	if !st.Decided {
		return // an overrun settled it already
	}
	h.decided(st, len(msgs))
	if (res.Recovered || res.Reason == history.ReasonNoEpoch) && res.Next.Offset > 1 {
		// Live delivery continues from here: a gap after it recovers
		// from here too, even before a message was delivered.
		h.last = history.Position{Offset: res.Next.Offset - 1, Epoch: res.Next.Epoch}
	}
	for i, e := range st.Emit {
		m := h.held[history.Position{Offset: e.Offset, Epoch: e.Epoch}]
		if i < len(msgs) {
			m = msgs[i]
		}
		if m != nil {
			h.emit(m, history.Position{Offset: e.Offset, Epoch: e.Epoch}, nil)
		}
	}
	h.held = nil
}

// decided sends the outcome of a settled recovery: on the RECEIPT when
// one is due, on the next MESSAGE in any case. Called with mu held.
func (h *historySubscriber) decided(st history.Step, replayed int) {
	hs := recoveredHeaders(st.Recovered, st.Reason)
	if o := h.s.srv.cfg.History.Observer; o != nil {
		o.Recovery(st.Recovered, st.Reason, replayed)
	}
	if h.receipt != "" {
		r := stompframe.Frame{Command: stompframe.CommandReceipt}
		r.Add("receipt-id", h.receipt)
		r.Headers = append(r.Headers, hs...)
		h.receipt = ""
		h.s.send(stompframe.Append(nil, &r, h.sub.Version))
	}
	h.pending = hs
}

// emit queues m, at pos (zero without one), for the client, with the
// pending outcome if there is one. Called with mu held.
func (h *historySubscriber) emit(m *broker.Message, pos history.Position, b *broker.Batch) bool {
	if h.pending != nil {
		m = broker.NewMessageParts(m.ID, m.Destination, append(slices.Clip(m.Headers()), h.pending...), m.Body()).KeepArrival(m)
		h.pending = nil
	}
	if pos.Offset != 0 {
		h.last = pos
	}
	return h.s.Deliver(h.sub, m, b)
}

// Deliver takes a live message from the broker: held while the recovery
// reads, delivered in offset order once it settled.
func (h *historySubscriber) Deliver(sub *broker.Subscription, m *broker.Message, b *broker.Batch) bool {
	pos, positioned := messagePosition(m)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	if !positioned || h.off {
		// A destination without history, or a message published
		// before its rule gave it one.
		return h.emit(m, history.Position{}, b)
	}
	if !h.rec.Settled() {
		h.held[pos] = m
	}
	st := h.rec.Live(history.Message{Offset: pos.Offset, Epoch: pos.Epoch, Data: m.Body()})
	if st.Gap && h.last.Epoch != "" && !h.stopped {
		// Something between the last message delivered and this one
		// was lost: recover it, holding this one meanwhile.
		if o := h.s.srv.cfg.History.Observer; o != nil {
			o.RecoveryGap(st.Reason)
		}
		h.newRecoveryLocked(m, pos)
		h.readLocked(history.Start{Kind: history.StartAt, Offset: h.last.Offset + 1, Epoch: h.last.Epoch})
		return true
	}
	if st.Gap {
		// Nothing was delivered yet to recover from: say so.
		if o := h.s.srv.cfg.History.Observer; o != nil {
			o.RecoveryGap(st.Reason)
		}
		h.pending = recoveredHeaders(false, st.Reason)
	}
	if st.Decided {
		h.decided(st, 0)
	}
	ok := true
	for _, e := range st.Emit {
		ep := history.Position{Offset: e.Offset, Epoch: e.Epoch}
		mm := h.held[ep]
		if ep == pos || mm == nil {
			mm = m
		}
		ok = h.emit(mm, ep, b) && ok
	}
	if h.rec.Settled() {
		h.held = nil
	}
	return ok
}

// stop ends the subscriber's recovery, if one is under way, and waits
// for it. The subscription is out of the broker already.
func (h *historySubscriber) stop() {
	h.mu.Lock()
	h.stopped = true
	if h.cancel != nil {
		h.cancel()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// subscribeHistory is onSubscribe for a SUBSCRIBE of a destination
// that is not a user one nor latest-value and that names a position
// (start). It reports whether the session is ending; the RECEIPT, if
// asked for, is sent here or when the recovery settles, never by handle.
func (s *session) subscribeHistory(f *stompframe.Frame, id, dest string, ack broker.AckMode, opts DestinationOptions, start history.Start, receipt string) (end bool) {
	h := &historySubscriber{s: s, dest: dest}
	ret, ok := s.srv.historyOf(dest)
	h.off, h.ret = !ok, ret
	if h.off {
		// Nothing to recover from: the first MESSAGE says so too.
		h.pending = recoveredHeaders(false, history.ReasonNoHistory)
	} else {
		h.receipt = receipt
		h.newRecoveryLocked(nil, history.Position{})
	}
	sub := broker.NewSubscription(id, dest, ack, s.version, h)
	h.sub = sub
	if s.subscribe(sub, opts, dest, receipt) {
		return true
	}
	if s.joinPresence(f, sub, receipt) { // presence membership: presence.go
		return true
	}
	if h.off {
		if o := s.srv.cfg.History.Observer; o != nil {
			o.Recovery(false, history.ReasonNoHistory, 0)
		}
		if receipt != "" {
			r := stompframe.Frame{Command: stompframe.CommandReceipt}
			r.Add("receipt-id", receipt)
			r.Headers = append(r.Headers, recoveredHeaders(false, history.ReasonNoHistory)...)
			return !s.reply(stompframe.Append(nil, &r, s.version))
		}
		return false
	}
	h.mu.Lock()
	h.readLocked(start)
	h.mu.Unlock()
	return false
}

// endHistory stops sub's recovery if it has one (unsubscribe).
func endHistory(sub *broker.Subscription) {
	if h, ok := sub.Subscriber.(*historySubscriber); ok {
		h.stop()
	}
}
