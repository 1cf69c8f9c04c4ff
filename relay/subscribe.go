package relay

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stompgate/stompgate/broker"
)

// control applies subscription changes recorded by the hooks, in one
// goroutine, so that a destination's SUBSCRIBE and UNSUBSCRIBE reach Redis
// in the order the broker decided them. It owns the subscription
// connections: one for a single Redis, one per shard group in use on
// Redis Cluster, each with its receiver goroutine.
func (r *Relay) control() {
	defer r.wg.Done()
	conns := make(map[int]*redis.PubSub)
	subscribed := make(map[string]struct{})
	defer func() {
		for _, ps := range conns {
			_ = ps.Close()
		}
	}()
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
		}
		r.apply(r.takeChanges(), conns, subscribed)
		r.cfg.Observer.RelaySubscriptions(len(subscribed))
	}
}

// change is one destination's wanted state.
type change struct {
	dest string
	want bool
}

// takeChanges returns the destinations whose state changed and empties the
// set.
func (r *Relay) takeChanges() []change {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]change, 0, len(r.changed))
	for dest := range r.changed {
		_, want := r.want[dest]
		out = append(out, change{dest, want})
	}
	clear(r.changed)
	return out
}

// apply subscribes and unsubscribes, one command per shard group and
// direction. go-redis records a channel even when the command fails and
// subscribes to it again when it reconnects, so a failure here only needs
// to be reported.
func (r *Relay) apply(changes []change, conns map[int]*redis.PubSub, subscribed map[string]struct{}) {
	type ops struct{ sub, unsub []string }
	byGroup := make(map[int]*ops)
	for _, c := range changes {
		_, have := subscribed[c.dest]
		if have == c.want {
			continue
		}
		g := r.group(c.dest)
		o := byGroup[g]
		if o == nil {
			o = &ops{}
			byGroup[g] = o
		}
		if c.want {
			subscribed[c.dest] = struct{}{}
			o.sub = append(o.sub, r.Channel(c.dest))
		} else {
			delete(subscribed, c.dest)
			o.unsub = append(o.unsub, r.Channel(c.dest))
		}
	}
	for g, o := range byGroup {
		ps := conns[g]
		if ps == nil {
			if len(o.sub) == 0 {
				continue
			}
			ps = r.newPubSub()
			conns[g] = ps
			r.wg.Add(1)
			go r.receive(ps)
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Timeout)
		var err error
		if len(o.unsub) > 0 {
			err = r.unsubscribe(ctx, ps, o.unsub)
		}
		if len(o.sub) > 0 {
			err = errors.Join(err, r.subscribe(ctx, ps, o.sub))
		}
		cancel()
		if err != nil {
			r.outage.failed("subscribe", err)
		}
	}
}

// newPubSub returns a subscription connection with no channel yet; it
// connects on the first subscription (on Cluster, to the master of that
// channel's slot).
func (r *Relay) newPubSub() *redis.PubSub {
	ctx := context.Background()
	if r.sharded {
		return r.cfg.Client.SSubscribe(ctx)
	}
	return r.cfg.Client.Subscribe(ctx)
}

func (r *Relay) subscribe(ctx context.Context, ps *redis.PubSub, channels []string) error {
	if r.sharded {
		return ps.SSubscribe(ctx, channels...)
	}
	return ps.Subscribe(ctx, channels...)
}

func (r *Relay) unsubscribe(ctx context.Context, ps *redis.PubSub, channels []string) error {
	if r.sharded {
		return ps.SUnsubscribe(ctx, channels...)
	}
	return ps.Unsubscribe(ctx, channels...)
}

// receive reads one subscription connection until Close. go-redis
// reconnects a failed connection on the next read and subscribes it to
// every channel again; receive only paces the attempts and reports the
// outage. A connection silent for PingInterval is checked with PING.
func (r *Relay) receive(ps *redis.PubSub) {
	defer r.wg.Done()
	ctx := context.Background()
	for {
		msg, err := ps.ReceiveTimeout(ctx, r.cfg.PingInterval)
		if r.stopping() {
			return
		}
		if err != nil {
			if isTimeout(err) {
				if err := ps.Ping(ctx); err != nil {
					r.outage.failed("ping", err)
				}
				continue
			}
			r.outage.failed("receive", err)
			select {
			case <-r.stop:
				return
			case <-time.After(r.cfg.RetryInterval):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			r.deliver(m.Payload)
		case *redis.Subscription, *redis.Pong:
			r.outage.ok()
		}
	}
}

// deliver hands a payload from Redis to the local broker, unless this
// relay published it.
func (r *Relay) deliver(payload string) {
	w, err := decodeMessage(payload, r.instance)
	if err != nil {
		r.cfg.Observer.RelayDropped(DropMalformed, 1)
		return
	}
	if w.instance == r.instance {
		return
	}
	// r.broker was set by Start before the goroutine that started this
	// receiver, so it is read without the lock.
	n := r.broker.Publish(broker.NewMessageParts(w.id, w.dest, w.headers, w.body))
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
