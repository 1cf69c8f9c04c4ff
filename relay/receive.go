package relay

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
	"github.com/stompgate/stompgate/history"
	"github.com/stompgate/stompgate/outcome"
)

// subConn is one subscription connection and what its receiver reports
// about it.
type subConn struct {
	group int
	ps    *redis.PubSub
	path  string // the outage path
	// closing is set by the control goroutine before it closes ps, so
	// that the receiver ends without reporting the closed connection.
	closing atomic.Bool
	// proven is set, by the control goroutine, once Redis confirmed a
	// subscription on this connection.
	proven bool
}

// eventKind is what a receiver reports to the control goroutine.
type eventKind uint8

const (
	// eventSubscribed: Redis confirmed a subscription to channel.
	eventSubscribed eventKind = iota + 1
	// eventUnsubscribed: Redis unsubscribed channel, because this relay
	// asked or because the channel's slot moved away from the node.
	eventUnsubscribed
	// eventFailed: the connection is unusable (reason says why); its
	// receiver has ended.
	eventFailed
)

// connEvent is one report of a receiver.
type connEvent struct {
	conn    *subConn
	kind    eventKind
	channel string
	reason  string
}

// report queues e for the control goroutine and wakes it.
func (r *Relay) report(e connEvent) {
	r.evMu.Lock()
	r.events = append(r.events, e)
	r.evMu.Unlock()
	r.signal()
}

// takeEvents returns the queued reports in the order they were made.
func (r *Relay) takeEvents() []connEvent {
	r.evMu.Lock()
	defer r.evMu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// receive reads one subscription connection until it fails or is closed.
// It hands messages to the local broker and reports subscription changes
// to the control goroutine. A connection silent for PingInterval is sent a
// PING; when that PING, or the confirmation of the subscriptions the
// connection was opened with, goes unanswered for PingTimeout, the
// connection is reported failed: a half-open connection is found within
// PingInterval + PingTimeout.
func (r *Relay) receive(c *subConn) {
	defer r.wg.Done()
	ctx := context.Background()
	wait, probing := r.cfg.PingTimeout, true // the confirmation is due
	for {
		msg, err := c.ps.ReceiveTimeout(ctx, wait)
		if r.stopping() || c.closing.Load() {
			return
		}
		if err != nil {
			reason := ResubscribeConnection
			switch {
			case isTimeout(err) && !probing:
				if err = c.ps.Ping(ctx); err == nil {
					wait, probing = r.cfg.PingTimeout, true
					continue
				}
			case isTimeout(err):
				reason = ResubscribeUnanswered
				err = errUnanswered
			case isMoved(err):
				reason = ResubscribeMoved
			}
			if reason != ResubscribeMoved {
				r.outage.failed(c.path, "receive", err)
			}
			r.forgetLive(c.group)
			r.report(connEvent{conn: c, kind: eventFailed, reason: reason})
			return
		}
		wait, probing = r.cfg.PingInterval, false
		r.outage.ok(c.path)
		switch m := msg.(type) {
		case *redis.Message:
			if history.IsFrame(m.Payload) {
				r.deliverFrame(m.Channel, m.Payload)
			} else {
				r.deliver(m.Payload)
			}
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				r.live.Store(m.Channel, struct{}{})
				r.report(connEvent{conn: c, kind: eventSubscribed, channel: m.Channel})
			case "unsubscribe", "sunsubscribe":
				r.live.Delete(m.Channel)
				r.report(connEvent{conn: c, kind: eventUnsubscribed, channel: m.Channel})
			}
		}
	}
}

// errUnanswered reports a PING or a confirmation that did not come.
var errUnanswered = errors.New("relay: Redis did not answer within PingTimeout")

// deliver hands a payload from Redis to the local broker, unless this
// relay published it. A payload larger than MaxPayload is dropped before
// anything reads it; one that does not decode, or whose envelope the
// Signer refuses, is dropped too; each counted by reason. The message
// gets an id from the local broker.
func (r *Relay) deliver(payload string) {
	if len(payload) > r.cfg.MaxPayload {
		r.cfg.Observer.RelayDropped(DropTooLarge, 1)
		return
	}
	now := time.Now()
	w, reason := decodeMessage(payload, r.instance, r.signer, now)
	if reason != "" {
		r.cfg.Observer.RelayDropped(reason, 1)
		return
	}
	if w.instance == r.instance {
		return
	}
	// r.broker was set by Start before the goroutine that started this
	// receiver, so it is read without the lock.
	m := broker.NewMessageParts(r.broker.NextID(), w.dest, w.headers, w.body)
	if m.Trace = w.trace; m.Trace != "" && r.cfg.Tracer != nil {
		defer r.cfg.Tracer.Deliver(m.Trace, m.Destination)()
	}
	m.SetArrival(outcome.DeliveryRelay, now.UnixNano())
	n := r.broker.Publish(m)
	r.cfg.Observer.RelayMessages(DirectionIn, 1)
	r.cfg.Observer.Delivered(w.dest, n)
}

func (r *Relay) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// isTimeout reports a read deadline passing, which on a subscription
// connection only means that nothing was published.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isMoved reports a Redis Cluster answer that the node does not serve the
// slot (any more): MOVED, ASK, or the cluster being down for it.
func isMoved(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
