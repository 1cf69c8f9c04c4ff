package relay

import (
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/outcome"
	"github.com/stompgate/stompgate/stompframe"
)

// Destinations with history (package history) do not go through the
// relay's PUBLISH queue: their messages are signed as usual and handed to
// a HistoryPublisher (history/streams), whose script appends each to the
// destination's stream and publishes it on the destination's channel
// (Channel) as a frame (history.AppendFrame): the position Redis gave it
// in front of the signed payload. Every instance, this one included,
// delivers the frame when it comes back, with the position headers: no
// instance delivers such a message at SEND time, so that history order is
// delivery order everywhere.

// frameOverhead is the most a frame adds to its payload: the version
// byte, the offset, the epoch's length and the epoch.
const frameOverhead = 1 + binary.MaxVarintLen64 + 1 + history.MaxEpochLen

// HistoryPublisher appends and publishes the messages of destinations
// with history without blocking; *streams.Publisher is one, configured
// with this relay's Channel and Sharded.
type HistoryPublisher interface {
	Publish(dest string, payload []byte, r history.Retention) bool
}

// SetHistory makes p the publisher of destinations with history. Call it
// before the server publishes.
func (r *Relay) SetHistory(p HistoryPublisher) {
	r.mu.Lock()
	r.history = p
	r.mu.Unlock()
}

// Append signs m and hands it to the HistoryPublisher for its
// destination's history, kept as ret says. It never blocks and delivers
// nothing locally (0): the frame Redis publishes comes back to this
// instance too. ok is false when m is dropped (too large, no publisher,
// the publisher's queue full), counted as a relay drop.
func (r *Relay) Append(m *broker.Message, ret history.Retention) (delivered int, ok bool) {
	r.mu.Lock()
	p := r.history
	r.mu.Unlock()
	if p == nil || r.closed.Load() {
		r.cfg.Observer.RelayDropped(DropQueueFull, 1)
		return 0, false
	}
	payload := appendMessage(nil, r.signer, time.Now(), r.instance, m)
	if len(payload) > r.cfg.MaxPayload {
		r.cfg.Observer.RelayDropped(DropTooLarge, 1)
		return 0, false
	}
	// The publisher counts what it drops itself.
	return 0, p.Publish(m.Destination, payload, ret)
}

// Decode opens a payload a history holds for dest (Append's), checking
// its signature with an age bound of ret.For plus MaxAge, and returns its
// headers and body. ok is false for a payload that fails, or that names
// another destination.
func (r *Relay) Decode(dest string, data []byte, ret history.Retention) ([]stompframe.Header, []byte, bool) {
	maxAge := ret.WithDefaults().For + r.cfg.MaxAge
	w, reason := decodeMessageWithin(string(data), "", r.signer, time.Now(), maxAge)
	if reason != "" || w.dest != dest {
		reason = DropMalformed
		r.cfg.Observer.RelayDropped(reason, 1)
		return nil, nil, false
	}
	return w.headers, w.body, true
}

// Live reports whether Redis confirmed this relay's subscription to
// dest's channel (and did not drop it since): from then on every frame
// published on it reaches this instance. A recovery reads the history
// only once its destination is live, so that nothing published between
// its registration and the channel's subscription is missed. A
// connection that fails makes its channels not live until the next one
// has them confirmed; what such a loss drops meanwhile shows as a gap
// in the next message's offset.
func (r *Relay) Live(dest string) bool {
	_, ok := r.live.Load(r.Channel(dest))
	return ok
}

// forgetLive forgets the channels of shard group g (all of them off
// Cluster) as live: their connection failed, and they are live again
// when Redis confirms them on the next one.
func (r *Relay) forgetLive(g int) {
	r.live.Range(func(k, _ any) bool {
		ch := k.(string)
		if !r.sharded || strings.HasPrefix(ch, r.cfg.Prefix+"{"+strconv.Itoa(g)+"}") {
			r.live.Delete(ch)
		}
		return true
	})
}

// deliverFrame hands a history's frame from channel to the local broker
// with its position headers, and its trace to Config.Tracer. Unlike a
// plain payload, the instance's own is delivered too. The payload must
// name the destination whose channel it came on, so that nobody who can
// publish on one channel reaches
// another destination's subscribers with a position of the first.
func (r *Relay) deliverFrame(channel, p string) {
	if len(p) > r.cfg.MaxPayload+frameOverhead {
		r.cfg.Observer.RelayDropped(DropTooLarge, 1)
		return
	}
	pos, payload, ok := history.DecodeFrame(p)
	if !ok {
		r.cfg.Observer.RelayDropped(DropMalformed, 1)
		return
	}
	now := time.Now()
	w, reason := decodeMessageWithin(payload, "", r.signer, now, 0)
	if reason == "" && r.Channel(w.dest) != channel {
		reason = DropMalformed
	}
	if reason != "" {
		r.cfg.Observer.RelayDropped(reason, 1)
		return
	}
	hs := append(w.headers,
		stompframe.Header{Name: history.HeaderOffset, Value: strconv.FormatUint(pos.Offset, 10)},
		stompframe.Header{Name: history.HeaderEpoch, Value: pos.Epoch})
	m := broker.NewMessageParts(r.broker.NextID(), w.dest, hs, w.body)
	if m.Trace = w.trace; m.Trace != "" && r.cfg.Tracer != nil {
		defer r.cfg.Tracer.Deliver(m.Trace, m.Destination)()
	}
	m.SetArrival(outcome.DeliveryRelay, now.UnixNano())
	n := r.broker.Publish(m)
	r.cfg.Observer.RelayMessages(DirectionIn, 1)
	r.cfg.Observer.Delivered(w.dest, n)
}
